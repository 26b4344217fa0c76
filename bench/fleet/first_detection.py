"""Time to first detection on a fresh appliance, with and without a prebuilt engine from the fleet.

    python -m bench.fleet first-detection [--rounds 2] [--build-step-s 5] [--json PATH]

Per round it starts a Mosquitto and the fleet service (``edge-app fleet``, SQLite, a separate
process), uploads the real YOLOv8n ONNX (/work/shared/models) as model ``gate`` version 1, then
starts two fresh appliances one after the other (``edge-app run`` processes with empty engine
caches, ``model.artifact: {name: gate, version: "1"}``, one ``test://bars`` camera, every
analysed frame published):

* A: the fleet holds no engine yet, so A downloads the ONNX, builds the engine and offers it;
* B: the fleet now holds A's engine for B's exact engine key, so B downloads it instead of building.

Measured per appliance: from the process start to its first ``R/cameras/bars/detections``
message on the broker. The appliances' TensorRT is the test stand-in (testkit/tensorrt_standin,
NOT TensorRT): it implements the documented TensorRT 10 Python API, its "engine" is the ONNX
plus build metadata, and inference is ONNX Runtime on the CPU. Its build takes no time of its
own, so every one of its 7 progress steps sleeps ``--build-step-s``: the build time in the
figures is SIMULATED (7 x build-step-s), standing for the minutes a Jetson takes (about 9.5
minutes on an Orin 16 GB), and is no measurement of TensorRT. What is measured for real is
everything around it: start-up, manifest, downloads, digests, engine cache, offer, model load.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional

import paho.mqtt.client as mqtt
import requests
from paho.mqtt.enums import CallbackAPIVersion

from bench.common.provenance import TEST_STANDIN, collect, write_results
from bench.fleet.device import bench_desired_key
from bench.fleet.server import FleetProcess, _wait, start_broker
from testkit.net import free_port
from testkit.paths import shared_dir
from testkit.standin_appliance import StandinAppliance

ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
BUILD_STEPS = 7  # progress steps of the stand-in's build (testkit/tensorrt_standin/tensorrt/_build_steps.py)


@dataclass
class Start:
    round: int
    appliance: str
    prebuilt: bool
    first_detection_s: float
    simulated_build_s: float  # the stand-in's sleeps inside that time (0 with a prebuilt engine)


class FirstDetections:
    """The monotonic time of each device's first detections message."""

    def __init__(self, port: int, prefix: str) -> None:
        self.seen: Dict[str, float] = {}
        self._lock = threading.Lock()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-first-{uuid.uuid4().hex[:6]}")
        self.client.on_connect = lambda c, u, f, rc, p=None: c.subscribe(f"{prefix}/+/cameras/+/detections", 0)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port, 30)
        self.client.loop_start()

    def _on_message(self, client, userdata, message) -> None:
        device_id = message.topic.split("/")[1]
        with self._lock:
            self.seen.setdefault(device_id, time.monotonic())

    def first(self, device_id: str) -> Optional[float]:
        with self._lock:
            return self.seen.get(device_id)

    def stop(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def _appliance(work: Path, device_id: str, prefix: str, broker_port: int, fleet_url: str, model: Path,
               build_step_s: float, gpu_identity: bool) -> StandinAppliance:
    folder = work / device_id
    folder.mkdir()
    config = {"device_id": device_id, "cameras": [{"id": "bars", "source": "test://bars?width=640&height=480&fps=5"}],
              "model": {"path": str(model), "backend": "tensorrt", "max_batch": 1, "engine_process": False,
                        "engine_dir": str(folder / "engines"), "artifact": {"name": "gate", "version": "1"}},
              "events": {"enabled": False},
              "mqtt": {"host": "127.0.0.1", "port": broker_port, "topic_prefix": prefix, "publish_empty": True},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "fleet": {"remote_config": True, "desired_key": bench_desired_key(device_id), "url": fleet_url,
                        "token": f"bench-device-token-{device_id}"}}
    return StandinAppliance(config, folder, build_step_s=build_step_s, gpu_identity=gpu_identity)


def _engines(fleet: FleetProcess) -> List[dict]:
    models = requests.get(fleet.url + "/api/v1/models", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                          timeout=10).json()["models"]
    return models[0]["engines"] if models else []


def _detected_or_ended(app: StandinAppliance, watch: FirstDetections, device_id: str) -> bool:
    """True once the device's first detection arrived, or its process ended (a failed start
    is reported at once, with its log, not after the timeout)."""
    return app.proc.poll() is not None or watch.first(device_id) is not None


def one_round(index: int, model: Path, build_step_s: float, timeout_s: float, gpu_identity: bool = False
              ) -> List[Start]:
    work = Path(tempfile.mkdtemp(prefix="bench-first-detection-"))
    prefix = f"first{uuid.uuid4().hex[:6]}"
    ids = [f"bench-a{index}", f"bench-b{index}"]
    broker = start_broker(work, 4)
    fleet = FleetProcess(work, broker.port, prefix, f"sqlite:///{work / 'fleet.db'}", ids,
                         {"api": {"token": ADMIN_TOKEN},
                          "device_tokens": {d: f"bench-device-token-{d}" for d in ids},
                          # the first appliance is the one trusted to build for the second
                          "artifacts": {"dir": str(work / "artifacts"), "max_mb": 1024, "max_upload_mb": 256,
                                        "engines_from": [ids[0]]}})
    watch = FirstDetections(broker.port, prefix)
    starts: List[Start] = []
    try:
        with open(model, "rb") as body:
            response = requests.put(f"{fleet.url}/api/v1/models/gate/1", data=body, timeout=60,
                                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        response.raise_for_status()
        for device_id, prebuilt in ((ids[0], False), (ids[1], True)):
            if prebuilt:
                _wait(lambda: _engines(fleet), 60, "the first appliance's engine offered to the fleet")
            app = _appliance(work, device_id, prefix, broker.port, fleet.url, model, build_step_s, gpu_identity)
            begun = time.monotonic()
            app.start(wait_api=False)
            try:
                try:
                    _wait(lambda: _detected_or_ended(app, watch, device_id), timeout_s, f"{device_id}'s first detection")
                except RuntimeError as error:
                    raise RuntimeError(f"{error}; its log ends:\n{app.log_tail()}") from None
                if app.proc.poll() is not None:
                    raise RuntimeError(f"{device_id} ended with {app.proc.returncode} before its first detection; "
                                       f"its log ends:\n{app.log_tail()}")
                log = app.log_text()
                used = "using the prebuilt engine" in log
                if used != prebuilt:
                    raise RuntimeError(f"{device_id} {'did not use' if prebuilt else 'used'} a prebuilt engine")
                starts.append(Start(index, device_id, prebuilt, round(watch.first(device_id) - begun, 2),
                                    0.0 if prebuilt else BUILD_STEPS * build_step_s))
                print(f"round {index} {device_id}: first detection after {starts[-1].first_detection_s:.1f} s "
                      f"({'prebuilt engine from the fleet' if prebuilt else 'built here'})", file=sys.stderr, flush=True)
                if not prebuilt:
                    _wait(lambda: _engines(fleet), 60, "the engine offered")
                    print(f"round {index}: the fleet's engine key: {json.dumps(_engines(fleet)[0].get('key'))}",
                          file=sys.stderr, flush=True)
            finally:
                app.close()
    finally:
        watch.stop()
        fleet.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return starts


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet first-detection", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--build-step-s", type=float, default=5.0,
                        help="sleep per stand-in build step (7 steps): the SIMULATED build time")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--gpu-identity", action="store_true",
                        help="the stand-in device takes this host's real GPU name and compute capability (needs CUDA)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    model = shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"
    starts = [start for index in range(args.rounds) for start in one_round(index, model, args.build_step_s,
                                                                          args.timeout_s, args.gpu_identity)]
    print("| round | appliance | engine | time to first detection (s) | of which simulated build (s) |")
    print("|---|---|---|---|---|")
    for start in starts:
        print(f"| {start.round} | {start.appliance} | {'prebuilt, from the fleet' if start.prebuilt else 'built here'} "
              f"| {start.first_detection_s:.1f} | {start.simulated_build_s:.0f} |")
    if args.json:
        write_results(args.json, {"starts": [asdict(s) for s in starts]}, collect(TEST_STANDIN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
