"""Publishing at the engine's full rate: result -> subscriber latency through a real Mosquitto.

    python -m bench.cpu publish-latency [--rate 2400] [--cameras 8] [--window-s 8] [--qos 0 1]
                                        [--load-threads 4] [--load-duty 0.5] [--detections 4]
                                        [--mosquitto /usr/sbin/mosquitto] [--out PATH]

The appliance's own ``MqttPublisher`` publishes detections messages to a Mosquitto this command
starts on a free port, at ``--rate`` messages/s in rounds of one message per camera (as the
pipeline's publish stage does after each batch). Each payload is built the way the appliance
builds it (``payloads.detections_payload`` from a ``Detections`` of ``--detections`` boxes) and
carries the moment the result was ready as its ``ts``; the subscriber
(``bench.common.mqtt_watch.WatcherProcess``, a process of its own) measures from there to its
arrival. ``--load-threads`` Python threads burn the interpreter for ``--load-duty`` of each
millisecond, standing in for the pipeline's own Python threads at full rate (capture, gather,
infer, publish), which take turns with paho's threads on the interpreter lock.

Where the time goes, per run:

* ``queue_ms``: from ``ts`` to the sender's ``Client.publish`` call (payload building is before
  ``ts`` in the pipeline and is timed apart as ``build_us``);
* ``delivered_ms``: from ``ts`` to the arrival at the subscriber (everything);
* messages/s offered, published and received; the CPU of the publishing threads per message
  (``mqtt``: the sender and paho's network thread; ``publish``: the producer: payload building
  and the queue).

Results go to ``bench/results/publish_latency.json``; bench/README.md has the tables.
"""
from __future__ import annotations

import argparse
import json
import logging
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from bench.common.figures import percentiles_ms
from bench.common.mqtt_watch import WatcherProcess
from edge_app.health.cpu_groups import thread_cpu_s, thread_group
from edge_app.config.schema import MQTTConfig
from edge_app.detect.detections import Detections
from edge_app.mqtt import payloads
from edge_app.mqtt.publisher import MqttPublisher
from bench.common.provenance import NO_MODEL, collect, write_results
from testkit.broker import MosquittoBroker
from testkit.paths import REPO

DEFAULT_OUT = REPO / "bench" / "results" / "publish_latency.json"
DEVICE_ID = "bench-publish"
LABELS = ("person", "bicycle", "car")

log = logging.getLogger("bench.cpu.publish_latency")


@dataclass
class RunResult:
    qos: int
    rate_offered: float
    cameras: int
    load_threads: int
    load_duty: float
    window_s: float
    offered: int
    published: int
    received: int
    dropped: int
    queued_at_end: int
    received_per_s: float
    build_us: Dict[str, Optional[float]]
    queue_ms: Dict[str, Optional[float]]
    delivered_ms: Dict[str, Optional[float]]
    cpu_us_per_message: Dict[str, float]


def start_broker(binary: str, work: Path) -> MosquittoBroker:
    """A throw-away broker on a free port (no persistence, no logging to disk beyond errors)."""
    return MosquittoBroker(work, allow_anonymous=True, persistence=False, log_types=("error",),
                           extra_config=["max_queued_messages 0"], binary=binary).start()


def _detections(count: int, rng: np.random.Generator) -> Detections:
    xy = rng.uniform(0, 1000, size=(count, 2)).astype(np.float32)
    xyxy = np.concatenate([xy, xy + 100.0], axis=1)
    return Detections(xyxy=xyxy, confidence=rng.uniform(0.3, 1.0, count).astype(np.float32),
                      class_id=rng.integers(0, len(LABELS), count).astype(np.int32), labels=LABELS)


def _load(stop: threading.Event, duty: float) -> None:
    """Burn the interpreter for ``duty`` of each millisecond, like a pipeline thread at full rate."""
    busy_s, idle_s = 0.001 * duty, 0.001 * (1.0 - duty)
    while not stop.is_set():
        end = time.perf_counter() + busy_s
        while time.perf_counter() < end:
            pass
        if idle_s > 0:
            time.sleep(idle_s)


def _group_cpu(before: Dict[int, float], after: Dict[int, float], names: Dict[int, str]) -> Dict[str, float]:
    groups: Dict[str, float] = {}
    for tid, cpu_s in after.items():
        group = thread_group(names.get(tid, ""))
        if names.get(tid, "").startswith("bench:load"):
            group = "load"
        groups[group] = groups.get(group, 0.0) + cpu_s - before.get(tid, 0.0)
    return groups


def _native_ids() -> Dict[int, str]:
    return {thread.native_id: thread.name for thread in threading.enumerate() if thread.native_id is not None}


def run_once(port: int, qos: int, rate: float, cameras: int, window_s: float, warmup_s: float,
             load_threads: int, load_duty: float, detections: int, max_inflight: Optional[int] = None) -> RunResult:
    config = MQTTConfig(host="127.0.0.1", port=port, qos=qos, publish_empty=True, max_queue=100000,
                        topic_prefix="bench")
    publisher = MqttPublisher(config, DEVICE_ID, "bench", **({} if max_inflight is None else {"max_inflight": max_inflight}))
    watcher = WatcherProcess("127.0.0.1", port, f"bench/{DEVICE_ID}/cameras/+/detections",
                             f"{DEVICE_ID}-watch")
    if not watcher.start():
        raise RuntimeError("the subscriber could not subscribe")
    publisher.start()
    deadline = time.monotonic() + 5.0
    while not publisher.connected and time.monotonic() < deadline:
        time.sleep(0.02)
    client = publisher._client
    calls: List[tuple] = []  # (payload, time of the publish call)
    original_publish = client.publish

    def timed_publish(topic, payload=None, qos=0, retain=False, properties=None):
        calls.append((payload, time.time()))
        return original_publish(topic, payload, qos=qos, retain=retain, properties=properties)

    client.publish = timed_publish
    stop = threading.Event()
    loaders = [threading.Thread(target=_load, args=(stop, load_duty), name=f"bench:load-{i}", daemon=True)
               for i in range(load_threads)]
    for thread in loaders:
        thread.start()
    rng = np.random.default_rng(0)
    boxes = [_detections(detections, rng) for _ in range(64)]
    build_us: List[float] = []
    offered = 0
    period_s = cameras / rate
    measuring = False
    start = time.monotonic()
    cpu_before: Dict[int, float] = {}
    published_before = 0
    next_round = start
    frame_id = 0
    while True:
        now = time.monotonic()
        if not measuring and now - start >= warmup_s:
            measuring = True
            watcher.recording = True
            calls.clear()
            cpu_before = thread_cpu_s()
            published_before = publisher.stats()["published"]
            measure_start = time.monotonic()
        if measuring and now - measure_start >= window_s:
            break
        if now < next_round:
            time.sleep(next_round - now)
            continue
        next_round += period_s
        frame_id += 1
        for camera in range(cameras):
            t0 = time.perf_counter()
            ts = time.time()
            payload = payloads.detections_payload(DEVICE_ID, f"cam{camera}", frame_id, ts, 1920, 1080, 30.0,
                                                  boxes[(frame_id + camera) % len(boxes)])
            publisher.publish_detections(f"cam{camera}", payload)
            if measuring:
                build_us.append((time.perf_counter() - t0) * 1e6)
                offered += 1
    elapsed_s = time.monotonic() - measure_start
    cpu_after = thread_cpu_s()
    names = _native_ids()
    names[threading.get_native_id()] = "pipeline:publish"  # the producer stands for the publish stage
    published = publisher.stats()["published"] - published_before
    time.sleep(1.0)  # let what is in flight arrive
    watcher.recording = False
    stop.set()
    delivered = watcher.delivered_ms()
    queue_ms = [(called - json.loads(payload)["ts"]) * 1000.0 for payload, called in list(calls)
                if payload and b'"frame_id"' in payload]
    stats = publisher.stats()
    publisher.stop()
    watcher.stop()
    cpu = _group_cpu(cpu_before, cpu_after, names)
    return RunResult(
        qos=qos, rate_offered=rate, cameras=cameras, load_threads=load_threads, load_duty=load_duty,
        window_s=round(elapsed_s, 2), offered=offered, published=published, received=len(delivered),
        dropped=stats["dropped"], queued_at_end=stats["queued"],
        received_per_s=round(len(delivered) / elapsed_s, 1),
        build_us={k: v for k, v in percentiles_ms(build_us).items()},
        queue_ms=percentiles_ms(queue_ms), delivered_ms=percentiles_ms(delivered),
        cpu_us_per_message={group: round(seconds * 1e6 / max(1, offered), 1)
                            for group, seconds in sorted(cpu.items()) if group in ("mqtt", "publish", "load", "main")})


def _table(results: List[RunResult]) -> str:
    lines = ["| QoS | offered msg/s | load threads × duty | received msg/s | result → sender p50 / p99 ms | "
             "result → subscriber p50 / p99 ms | build µs p50 | CPU µs per message: mqtt / publish |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.qos} | {r.rate_offered:.0f} | {r.load_threads} × {r.load_duty:.2f} | {r.received_per_s:.0f} | "
                     f"{r.queue_ms['p50']} / {r.queue_ms['p99']} | {r.delivered_ms['p50']} / {r.delivered_ms['p99']} | "
                     f"{r.build_us['p50']} | {r.cpu_us_per_message.get('mqtt')} / {r.cpu_us_per_message.get('publish')} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu publish-latency", description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, nargs="+", default=[2400.0], help="messages/s offered")
    parser.add_argument("--cameras", type=int, default=8)
    parser.add_argument("--window-s", type=float, default=8.0)
    parser.add_argument("--warmup-s", type=float, default=2.0)
    parser.add_argument("--qos", type=int, nargs="+", default=[0, 1], choices=(0, 1))
    parser.add_argument("--load-threads", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--load-duty", type=float, default=0.5)
    parser.add_argument("--detections", type=int, default=4, help="boxes per message")
    parser.add_argument("--max-inflight", type=int, help="the publisher's window (default: the appliance's)")
    parser.add_argument("--mosquitto", default="/usr/sbin/mosquitto")
    parser.add_argument("--switch-interval-ms", type=float)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from bench.common.settings import apply_switch_interval

    switch_ms = apply_switch_interval(args.switch_interval_ms)
    results: List[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="bench-publish-") as work:
        broker = start_broker(args.mosquitto, Path(work))
        try:
            for rate in args.rate:
                for load in args.load_threads:
                    for qos in args.qos:
                        result = run_once(broker.port, qos, rate, args.cameras, args.window_s, args.warmup_s,
                                          load, args.load_duty, args.detections, args.max_inflight)
                        log.info("%s", json.dumps(asdict(result)))
                        results.append(result)
        finally:
            broker.stop()
    print(_table(results))
    write_results(args.out, {"switch_interval_ms": switch_ms, "runs": [asdict(r) for r in results]}, collect(NO_MODEL))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
