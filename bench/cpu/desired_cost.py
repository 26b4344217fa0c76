"""What hostile ``R/config/desired`` traffic costs the appliance: per big unsigned message, and in a flood.

    python -m bench.cpu desired-cost [--messages 50] [--flood-lines 150000] [--source DIR] [--json PATH]

1. **Per message**, in this process: a desired message of about 250 KB without a signature, on an
   appliance with ``fleet.desired_key`` set, through the appliance's own gate. ``parsed`` is the
   path that parses the message and then finds no signature (``parse_desired`` +
   ``DesiredGate.refusal``: what every message cost before the check that needs no parsing);
   ``unparsed`` is ``DesiredGate.refusal_before_parsing``, which refuses it unread.
   ``fake_signed`` is the same message with a signature of the right form but wrong digits,
   which must be parsed and canonicalised to be refused: the intake's token bucket bounds how
   many of those a second get that far. CPU time is ``time.process_time`` per message.
2. **Flood**, with real processes: Mosquitto, ``edge-app run`` (the tree ``--source``, default
   this checkout, so an older tree gives the figures before a change) with remote configuration
   and a key on the anonymous broker, one camera looping bus.jpg with events on, and
   ``mosquitto_pub -l`` of ``--flood-lines`` lines of ``{}`` on the desired topic. Counted from
   the start of the flood until ``--settle-s`` after its end: refusal reports received on
   ``R/config/reported``, event messages received, the appliance's ``mqtt.dropped`` and refusal
   count, and its CPU seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from bench.common.provenance import NO_MODEL, ONNXRUNTIME_CPU, collect, write_results
from edge_app.config.file import parse_config
from edge_app.fleet_agent.desired.config import MAX_DESIRED_BYTES, DesiredConfigError, parse_desired
from edge_app.fleet_agent.desired.gate import DesiredGate

KEY = "bench-desired-key-0123456789abcdef0123"
DEVICE = "bench1"
TARGET_BYTES = 250_000


def big_unsigned_message(target_bytes: int = TARGET_BYTES) -> bytes:
    """A plausible desired message (cameras with zones) of about ``target_bytes``, without a signature."""
    cameras: List[Dict[str, Any]] = []
    body = b""
    while len(body) < target_bytes:
        i = len(cameras)
        cameras.append({"id": f"cam{i}", "source": f"rtsp://10.0.{i // 250}.{i % 250}/stream",
                        "zones": [{"name": f"zone{z}", "polygon": [[0.1 * p, 0.05 * z + 0.01 * p] for p in range(8)]}
                                  for z in range(4)]})
        body = json.dumps({"version": 7, "patch": {"cameras": cameras}}).encode()
    assert len(body) <= MAX_DESIRED_BYTES
    return body


def _cpu_ms_per_call(call, messages: int) -> float:
    call()  # warm
    start_s = time.process_time()
    for _ in range(messages):
        call()
    return round((time.process_time() - start_s) * 1000 / messages, 3)


def per_message(messages: int) -> Dict[str, Any]:
    config = parse_config({"device_id": DEVICE, "cameras": [{"id": "cam", "source": "test://bars"}],
                           "model": {"path": "model.onnx"}, "mqtt": {"enabled": False},
                           "fleet": {"remote_config": True, "desired_key": KEY}})
    gate = DesiredGate(lambda: config)
    unsigned = big_unsigned_message()
    fake_signed = unsigned[:-1] + b', "sig": "hmac-sha256:' + b"0" * 64 + b'"}'

    def parsed(payload: bytes) -> None:
        try:
            desired = parse_desired(payload)
        except DesiredConfigError:
            desired = None
        assert gate.refusal(desired) is not None

    def unparsed() -> None:
        assert gate.refusal_before_parsing(unsigned) is not None

    return {"message_bytes": len(unsigned), "messages": messages,
            "parsed_cpu_ms": _cpu_ms_per_call(lambda: parsed(unsigned), messages),
            "unparsed_cpu_ms": _cpu_ms_per_call(unparsed, messages),
            "fake_signed_cpu_ms": _cpu_ms_per_call(lambda: parsed(fake_signed), messages)}


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def flood(lines: int, settle_s: float, source: Optional[Path], model_path: Path, work_dir: Path) -> Dict[str, Any]:
    # The benchmark's processes are the test suite's: a real broker, a real `edge-app run`.
    from edge_app.commands.demo_clip import make_clip
    from testkit.appliance import ApplianceProcess
    from testkit.waiting import wait_until
    from testkit.broker import MosquittoBroker, MqttCollector
    from testkit.net import free_port
    from testkit.paths import shared_dir

    mosquitto_pub = shutil.which("mosquitto_pub")
    if mosquitto_pub is None:
        raise SystemExit("mosquitto_pub is not installed")
    clip = make_clip([shared_dir() / "images" / "bus.jpg"], work_dir / "bus.mp4", seconds_per_image=5.0)
    broker = MosquittoBroker(work_dir / "mosquitto").start()
    root = f"edge_app/{DEVICE}"
    collector = MqttCollector(broker.host, broker.port, [f"{root}/events", f"{root}/config/reported"]).start()
    config = {"device_id": DEVICE,
              "cameras": [{"id": "bus", "source": str(clip), "loop": True, "realtime": True, "fps_limit": 5}],
              "model": {"path": str(model_path), "max_batch": 1},
              "mqtt": {"host": broker.host, "port": broker.port},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "events": {"enabled": True, "dir": str(work_dir / "events")},
              "fleet": {"remote_config": True, "desired_key": KEY}}
    if source is not None:
        os.environ["PYTHONPATH"] = str(source.resolve())  # the appliance's tree; its children inherit it
    app = ApplianceProcess(config, work_dir)
    try:
        app.start()
        collector.wait_for_message(f"{root}/events", timeout_s=90)
        collector.clear()
        cpu_before_s, started_s = _cpu_s(app.proc.pid), time.monotonic()
        subprocess.run([mosquitto_pub, "-h", broker.host, "-p", str(broker.port), "-t", f"{root}/config/desired", "-l"],
                       input=b"{}\n" * lines, check=True, timeout=600)
        flood_s = time.monotonic() - started_s
        time.sleep(settle_s)
        window_s = time.monotonic() - started_s
        cpu_s = _cpu_s(app.proc.pid) - cpu_before_s
        status = wait_until(lambda: app.get("/api/v1/status").json(), 30, "the status")
        reports = [m for m in collector.payloads(f"{root}/config/reported") if m.get("version") is None]
        return {"source": str(source or "this checkout"), "flood_lines": lines, "flood_s": round(flood_s, 2),
                "window_s": round(window_s, 2), "refusal_reports": len(reports),
                "event_messages": len(collector.messages(f"{root}/events")),
                "mqtt_dropped": status["mqtt"]["dropped"],
                "refused": (status.get("remote_config") or {}).get("refused"),
                "appliance_cpu_s": round(cpu_s, 2), "appliance_cpu_percent": round(100 * cpu_s / window_s, 1)}
    finally:
        collector.stop()
        app.close()
        broker.kill()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50, help="big messages per path measured")
    parser.add_argument("--flood-lines", type=int, default=150_000, help="0: no flood run")
    parser.add_argument("--settle-s", type=float, default=15.0)
    parser.add_argument("--source", type=Path, default=None, help="the tree to run edge-app from (default: this one)")
    parser.add_argument("--model", type=Path, default=None, help="default: the shared yolov8n_coco_dynbatch.onnx")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result: Dict[str, Any] = {"per_message": per_message(args.messages)}
    if args.flood_lines:
        from testkit.paths import shared_dir

        model = args.model or shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"
        with tempfile.TemporaryDirectory(prefix="desired-cost-") as work:
            result["flood"] = flood(args.flood_lines, args.settle_s, args.source, model.resolve(), Path(work))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        engine = ONNXRUNTIME_CPU if args.flood_lines else NO_MODEL  # the flood runs a real appliance
        write_results(args.json, result, collect(engine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
