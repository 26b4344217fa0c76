"""A model rollout over the air: one model version to N simulated appliances through the fleet service.

    python -m bench.fleet models [--devices 200] [--model-mb 12] [--timeout-s 300] [--json PATH]

It starts a Mosquitto, the fleet service (``edge-app fleet``, a separate process, SQLite, its
artifact store in a temporary directory) with a device token and desired key per appliance,
uploads a model of ``--model-mb`` MiB (random bytes: the fleet never parses them) and connects N
simulated appliances, one MQTT connection each. Then it rolls the version out to all of them with
``POST /api/v1/models/<name>/<version>/rollout`` and each appliance does what the real one does
with a desired artifact version (docs/fleet.md, "Models and engines over the air"): it reports
``downloading``, fetches its manifest and checks the signature with its key, downloads the ONNX
file with its device token (reporting progress every tenth), checks the SHA-256, stages it and
reports ``running``. That work is the appliance's own code: ``edge_app.fleet_agent``'s
``Stager`` and ``FleetClient`` over HTTPS (the fleet serves TLS with a throw-away CA the
appliances verify), and ``models_state`` published on every change as the fleet agent does.
Only the model load itself is left out. Measured: the time from the rollout request until the
fleet's ``GET /api/v1/rollouts/<id>`` counts every appliance ``running``, the fleet process's
CPU over that time (psutil), and the bytes the appliances received. The appliances' work (TLS,
hashing, writing the file) runs in this process on the same machine, so the times are upper bounds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional, Sequence

import paho.mqtt.client as mqtt
import requests
from paho.mqtt.enums import CallbackAPIVersion

from bench.common.provenance import NO_MODEL, collect, write_results
from bench.fleet.device import bench_desired_key
from bench.fleet.server import FleetProcess, _wait, start_broker
from edge_app.config.file import parse_config
from edge_app.config.schema_model import ArtifactConfig
from edge_app.fleet_agent.artifacts.client import FleetRefused, FleetUnreachable
from edge_app.fleet_protocol.artifacts_manifest import ManifestError
from edge_app.fleet_agent.artifacts.stage import Stager
from edge_app.fleet_agent.artifacts.state import ModelsState
from testkit.certs import make_test_certificates

ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
MODEL, VERSION = "gate", "2"
RUNNING_VERSION = "1"  # what every simulated appliance runs before the rollout


def device_token(device_id: str) -> str:
    return f"bench-device-token-{device_id}"


@dataclass
class ModelRolloutResult:
    devices: int
    model_bytes: int
    upload_s: float
    all_running_s: float  # the rollout request until the fleet counts every appliance running
    first_running_s: float
    download_p50_s: float  # one appliance's manifest and download, its own wall time
    download_max_s: float
    fleet_cpu_s: float  # the fleet service process over all_running_s
    fleet_cpu_cores: float
    bytes_served: int  # what the appliances received (manifests and blobs)
    served_mb_per_s: float
    failed: int
    load_avg_1m: float


class SimAppliance:
    """One appliance: an MQTT connection for desired/reported, the appliance's own fleet client for artifacts."""

    def __init__(self, device_id: str, broker_port: int, prefix: str, fleet: FleetProcess, work: Path, done: "Tally"):
        self.device_id = device_id
        self.root = f"{prefix}/{device_id}"
        self.done = done
        self.version = 0
        self.received = 0
        self.download_s = 0.0
        self.config = parse_config({
            "device_id": device_id,
            "model": {"path": "fallback.onnx", "engine_dir": str(work / "devices" / device_id),
                      "artifact": {"name": MODEL, "version": RUNNING_VERSION}},
            "fleet": {"url": fleet.url, "token": device_token(device_id), "ca_certs": fleet.verify,
                      "desired_key": bench_desired_key(device_id)}})
        self.state = ModelsState()
        self.state.set(MODEL, RUNNING_VERSION, "running")
        self.state.on_change(self._publish_state)
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-{device_id}", clean_session=True)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", broker_port, keepalive=60)
        self.client.loop_start()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        client.subscribe(f"{self.root}/config/desired", qos=1)
        # a rollout to "all" targets the devices that report the model, as real appliances do
        self._publish_state()

    def _publish_state(self) -> None:
        body = {"state": "online", "device_id": self.device_id, "version": "bench", "ts": time.time(),
                "models_state": self.state.snapshot()}
        self.client.publish(f"{self.root}/status", json.dumps(body), qos=1, retain=True)

    def _on_message(self, client, userdata, message) -> None:
        if not message.payload:
            return
        desired = json.loads(message.payload)
        # the rollout addresses the model running fleet model MODEL (edge_app.config.model_patch)
        addressed = ((desired.get("patch") or {}).get("models") or {}).get(f"artifact:{MODEL}") or {}
        version = addressed.get("artifact", {}).get("version")
        if desired.get("version", 0) <= self.version or version != VERSION:
            return
        self.version = desired["version"]
        client.publish(f"{self.root}/config/reported", json.dumps({"version": self.version, "status": "applied"}),
                       qos=1, retain=True)
        threading.Thread(target=self._fetch, name=f"bench:{self.device_id}", daemon=True).start()

    def _fetch(self) -> None:
        started = time.monotonic()
        model = self.config.model.model_copy(update={"artifact": ArtifactConfig(name=MODEL, version=VERSION)})
        config = self.config.model_copy(update={"model": model})
        try:
            staged, _client = Stager(lambda: config, self.state).stage(model, threading.Event())
            self.received = sum(f.stat().st_size for f in staged.dir.iterdir() if f.is_file())
            self.download_s = time.monotonic() - started
            self.state.set(MODEL, VERSION, "running")
            shutil.rmtree(staged.dir, ignore_errors=True)  # 200 copies would fill the disk
            self.done.add(True)
        except (FleetUnreachable, FleetRefused, ManifestError, OSError) as err:
            self.state.set(MODEL, VERSION, "failed", reason=str(err)[:200])
            self.done.add(False)

    def disconnect(self) -> None:
        self.client.disconnect()

    def join(self) -> None:
        self.client.loop_stop()


class Tally:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ok = 0
        self.failed = 0

    def add(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.ok += 1
            else:
                self.failed += 1


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def run(devices: int, model_mb: float, timeout_s: float, work: Path) -> ModelRolloutResult:
    begun = time.monotonic()
    ids = [f"edge-{i:04d}" for i in range(devices)]
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    broker = start_broker(work, devices)
    extra = {"api": {"token": ADMIN_TOKEN}, "device_tokens": {d: device_token(d) for d in ids},
             "artifacts": {"dir": str(work / "artifacts"), "max_mb": 1024, "max_upload_mb": 256}}
    certs = make_test_certificates(work / "tls")
    fleet = FleetProcess(work, broker.port, prefix, f"sqlite:///{work / 'fleet.db'}", ids, extra, tls=certs)
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    https = requests.Session()
    https.verify = fleet.verify
    https.trust_env = False  # else REQUESTS_CA_BUNDLE would win over the throw-away CA
    print(f"broker and fleet service up after {time.monotonic() - begun:.1f} s", file=sys.stderr, flush=True)
    appliances: List[SimAppliance] = []
    try:
        model = os.urandom(int(model_mb * (1 << 20)))
        started = time.monotonic()
        answer = https.put(f"{fleet.url}/api/v1/models/{MODEL}/{VERSION}", data=model, headers=admin, timeout=120)
        answer.raise_for_status()
        upload_s = time.monotonic() - started
        tally = Tally()
        appliances = [SimAppliance(d, broker.port, prefix, fleet, work, tally) for d in ids]
        _wait(lambda: https.get(f"{fleet.url}/api/v1/status", headers=admin, timeout=10).json()["devices"]
              .get("online", 0) == devices, 120, f"{devices} appliances online")

        print(f"{devices} appliances online after {time.monotonic() - begun:.1f} s", file=sys.stderr, flush=True)
        cpu_before, started = fleet.cpu_s(), time.monotonic()
        answer = https.post(f"{fleet.url}/api/v1/models/{MODEL}/{VERSION}/rollout", json={"devices": "all"},
                               headers=admin, timeout=60)
        answer.raise_for_status()
        rollout_id = answer.json()["rollout_id"]
        first_running: List[float] = []

        def all_running() -> bool:
            states = https.get(f"{fleet.url}/api/v1/rollouts/{rollout_id}", headers=admin,
                                  timeout=30).json()["model"]["devices"]
            if states["running"] and not first_running:
                first_running.append(time.monotonic() - started)
            return states["running"] + states["failed"] == devices

        _wait(all_running, timeout_s, "every appliance running the new model")
        all_running_s = time.monotonic() - started
        cpu_s = fleet.cpu_s() - cpu_before
        served = sum(a.received for a in appliances)
        times = [a.download_s for a in appliances if a.download_s]
        return ModelRolloutResult(
            devices=devices, model_bytes=len(model), upload_s=round(upload_s, 2), all_running_s=round(all_running_s, 2),
            first_running_s=round(first_running[0] if first_running else all_running_s, 2),
            download_p50_s=round(_median(times), 2), download_max_s=round(max(times, default=0.0), 2),
            fleet_cpu_s=round(cpu_s, 2), fleet_cpu_cores=round(cpu_s / all_running_s, 2), bytes_served=served,
            served_mb_per_s=round(served / all_running_s / 1e6, 1), failed=tally.failed,
            load_avg_1m=round(os.getloadavg()[0], 1))
    finally:
        for appliance in appliances:  # every disconnect first: each loop then ends at once
            appliance.disconnect()
        for appliance in appliances:
            appliance.join()
        https.close()
        fleet.stop()
        broker.stop()


def table(result: ModelRolloutResult) -> str:
    rows = [("appliances", f"{result.devices}"), ("model", f"{result.model_bytes / 1e6:.1f} MB"),
            ("upload of the model", f"{result.upload_s} s"),
            ("rollout request until the fleet shows every appliance running", f"{result.all_running_s} s"),
            ("... until the first", f"{result.first_running_s} s"),
            ("one appliance's manifest and download, median / slowest", f"{result.download_p50_s} s / {result.download_max_s} s"),
            ("fleet service CPU over the rollout", f"{result.fleet_cpu_s} s ({result.fleet_cpu_cores} cores)"),
            ("bytes served", f"{result.bytes_served / 1e9:.2f} GB ({result.served_mb_per_s} MB/s)"),
            ("failed", f"{result.failed}"), ("load average (1 min) at the end", f"{result.load_avg_1m}")]
    return "\n".join(["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet models", description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=200)
    parser.add_argument("--model-mb", type=float, default=12.0)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--json", help="write the result here too")
    args = parser.parse_args(argv)
    if not 1 <= args.devices <= 2000 or not 0 < args.model_mb <= 200:
        parser.error("--devices from 1 to 2000, --model-mb up to 200")
    with tempfile.TemporaryDirectory(prefix="bench-models-") as temp:
        result = run(args.devices, args.model_mb, args.timeout_s, Path(temp))
    print(table(result))
    print(json.dumps(asdict(result)))
    if args.json:
        write_results(Path(args.json), asdict(result), collect(NO_MODEL))
    return 0 if result.failed == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
