"""Models and prebuilt engines between a real fleet service and two real ``edge-app run`` appliances.

The appliances' TensorRT is the test stand-in (testkit/tensorrt_standin, NOT TensorRT: it
implements the documented TensorRT 10 Python API calls edge-app makes; its engine is the ONNX
plus build metadata, run with ONNX Runtime). The fleet service is the real one, on SQLite and
PostgreSQL, with its real HTTP API and a real Mosquitto. Model versions are the real YOLOv8n
ONNX with a metadata entry changed, so each version has a digest of its own.

Appliance A fetches a version, builds its engine and offers it; appliance B fetches the same
version and starts without building. Then B is given broken versions: a download corrupted on
the service's disk, an engine whose bytes do not match its digest, an engine of another
device's key, and a service that goes away in the middle of a download. Each time B keeps
running the model it had, and says why in ``models_state``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from tests.fleet.artifact_helpers import (ADMIN, KEYS, TOKENS, artifact_fleet, model_state, offer, roll_out,
                                         sha, stamped_versions, upload)
from tests.support.cut_proxy import CutProxy
from testkit.net import free_port
from testkit.standin_appliance import StandinAppliance
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

SOURCE = "test://bars?width=160&height=120&fps=2"


@pytest.fixture(scope="module")
def versions(tmp_path_factory, model_path):
    """gate versions 1..4: the same network, told apart by a metadata entry (so by their SHA-256)."""
    return stamped_versions(model_path, tmp_path_factory.mktemp("versions"), ("1", "2", "3", "4"))


@pytest.fixture
def fleet(fleet_factory, tmp_path):
    return artifact_fleet(fleet_factory, tmp_path, max_upload_mb=64, artifacts={"max_mb": 512})


def _appliance(fleet, broker, tmp_path: Path, device_id: str, model_path, url: str, version: str,
               camera=None) -> StandinAppliance:
    workdir = tmp_path / device_id
    workdir.mkdir()
    camera = camera or {"id": "bars", "source": SOURCE, "detect": False}
    config = {"device_id": device_id, "cameras": [camera],
              "model": {"path": str(model_path), "backend": "tensorrt", "max_batch": 1, "engine_process": False,
                        "engine_dir": str(workdir / "engines"), "artifact": {"name": "gate", "version": version}},
              "events": {"dir": str(workdir / "events")},
              "mqtt": {"host": broker.host, "port": broker.port, "topic_prefix": fleet.prefix, "keepalive": 5},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "fleet": {"remote_config": True, "desired_key": KEYS[device_id], "url": url, "token": TOKENS[device_id]}}
    return StandinAppliance(config, workdir)


def _engines(fleet, version: str) -> list:
    models = fleet.get("/api/v1/models", headers=ADMIN).json()["models"]
    return next(m["engines"] for m in models if m["version"] == version)


def _running(app: StandinAppliance) -> str:
    return app.get("/api/v1/config").json()["model"]["artifact"]["version"]


def _start(app: StandinAppliance) -> StandinAppliance:
    app.start()
    wait_for(lambda: app.get("/api/v1/status").json().get("backend") == "tensorrt", 120,
             f"{app.config['device_id']} to run its model ({app.log_tail()})")
    return app


def _cut(proxy: CutProxy) -> bool:
    """Make one connection through the proxy, which then goes away; True once it is down."""
    if not proxy.down:
        try:
            requests.get(proxy.url + "/healthz", timeout=2)
        except requests.RequestException:
            pass
    return proxy.down


def _blob(tmp_path: Path, digest: str) -> Path:
    found = [p for p in (tmp_path / "artifacts").rglob("*") if p.is_file() and digest in p.name]
    assert found, f"no blob {digest} under the fleet's artifacts"
    return found[0]


def _people(app: StandinAppliance, camera_id: str) -> int:
    answer = app.get(f"/api/v1/cameras/{camera_id}/detections")
    if answer.status_code != 200:
        return 0
    return sum(1 for found in answer.json()["detections"] if found["label"] == "person")


def test_b_starts_with_the_engine_a_built_and_refuses_one_of_another_key(fleet, mosquitto_broker, tmp_path,
                                                                         model_path, versions, bus_clip):
    assert upload(fleet, "gate", "1", versions["1"], b"person\nbicycle\n").status_code == 201
    a = _appliance(fleet, mosquitto_broker, tmp_path, "edge-a", model_path, fleet.url, "1")
    # B analyses a real clip (the people of bus.jpg) through the engine it fetched
    b = _appliance(fleet, mosquitto_broker, tmp_path, "edge-b", model_path, fleet.url, "1",
                   camera={"id": "bus", "source": str(bus_clip), "loop": True, "detect": True})
    try:
        _start(a)
        assert "building TensorRT engine" in a.log_text()
        wait_for(lambda: _engines(fleet, "1"), 30, f"A's engine offered to the fleet ({a.log_tail()})")
        engine = _engines(fleet, "1")[0]
        assert engine["device_id"] == "edge-a" and engine["key"]["onnx_sha256"] == sha(versions["1"])
        wait_for(lambda: model_state(fleet, "edge-a").get("state") == "running", 30, "A reports gate 1 running")

        _start(b)
        log = b.log_text()
        assert "using the prebuilt engine" in log and "building TensorRT engine" not in log, log
        staged = Path(b.workdir / "engines" / "fleet" / "gate" / "1")
        assert (staged / "model.onnx").read_bytes() == versions["1"]
        assert (staged / "labels.txt").read_text() == "person\nbicycle\n"
        sidecar = json.loads(next(staged.glob("*.engine.json")).read_text())
        assert "prebuilt" in sidecar and "build" not in sidecar
        assert b.get("/api/v1/status").json()["engine_build"] is None
        wait_for(lambda: model_state(fleet, "edge-b").get("state") == "running", 30, "B reports gate 1 running")
        # the prebuilt engine analyses frames: the 4 people of bus.jpg, labelled from the fleet's labels.txt
        assert wait_for(lambda: _people(b, "bus") >= 3, 60, f"B to find the people of the bus clip ({b.log_tail()})")

        # Version 2's only engine has another device's key (TensorRT 10.4): never fetched nor deserialised.
        assert upload(fleet, "gate", "2", versions["2"]).status_code == 201
        foreign = dict(sidecar["key"], onnx_sha256=sha(versions["2"]), tensorrt_version="10.4.0")
        garbage = b"not an engine: deserialising this would fail the load" * 100
        assert offer(fleet, "edge-a", foreign, garbage).json()["stored"] is True
        roll_out(fleet, "2", "edge-b")
        wait_for(lambda: model_state(fleet, "edge-b").get("version") == "2"
                 and model_state(fleet, "edge-b").get("state") == "running", 120, f"B runs gate 2 ({b.log_tail()})")
        log = b.log_text()
        assert "no prebuilt engine for this device (TensorRT 10.4.0 -> 10.3.0)" in log
        fetched = [f for f in (b.workdir / "engines").rglob("*") if f.is_file() and garbage in f.read_bytes()]
        assert fetched == []  # the foreign engine's bytes never reached the device
        sidecar = json.loads(next((b.workdir / "engines" / "fleet" / "gate" / "2").glob("*.engine.json")).read_text())
        assert "build" in sidecar and sidecar["key"]["tensorrt_version"] == "10.3.0"
        assert _running(b) == "2"
    finally:
        a.close()
        b.close()


def test_broken_downloads_keep_the_old_model_and_say_why(fleet, mosquitto_broker, tmp_path, model_path, versions):
    for version in ("1", "2", "3", "4"):
        assert upload(fleet, "gate", version, versions[version]).status_code == 201
    proxy = CutProxy(("127.0.0.1", int(fleet.url.rsplit(":", 1)[1])))
    b = _appliance(fleet, mosquitto_broker, tmp_path, "edge-b", model_path, proxy.url, "1")
    try:
        _start(b)
        wait_for(lambda: model_state(fleet, "edge-b").get("state") == "running", 30, "B reports gate 1 running")

        # 1. Version 2's ONNX corrupted on the service's disk (same size, one byte changed).
        blob = _blob(tmp_path, sha(versions["2"]))
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF
        blob.chmod(0o644)
        blob.write_bytes(bytes(data))
        roll_out(fleet, "2", "edge-b")
        wait_for(lambda: model_state(fleet, "edge-b").get("state") == "failed", 60, f"B fails gate 2 ({b.log_tail()})")
        state = model_state(fleet, "edge-b")
        assert state["version"] == "2" and "does not match the SHA-256" in state["reason"]
        wait_for(lambda: _running(b) == "1", 30, "B's configuration back to gate 1")
        assert not (b.workdir / "engines" / "fleet" / "gate" / "2" / "model.onnx").exists()

        # 2. Version 3's engine (offered for B's own key) replaced on the service's disk: refused unread.
        own_key = json.loads(next((b.workdir / "engines" / "fleet" / "gate" / "1").glob("*.engine.json")).read_text())["key"]
        engine = b"an engine for B's key" * 1000
        assert offer(fleet, "edge-a", dict(own_key, onnx_sha256=sha(versions["3"])), engine).json()["stored"] is True
        blob = _blob(tmp_path, sha(engine))
        blob.chmod(0o644)
        blob.write_bytes(b"X" * len(engine))
        roll_out(fleet, "3", "edge-b")
        wait_for(lambda: model_state(fleet, "edge-b").get("version") == "3"
                 and model_state(fleet, "edge-b").get("state") == "failed", 60, f"B fails gate 3 ({b.log_tail()})")
        assert "prebuilt engine was refused" in model_state(fleet, "edge-b")["reason"]
        wait_for(lambda: _running(b) == "1", 30, "B's configuration back to gate 1")

        # 3. The service goes away 3 MB into version 4's 12 MB ONNX, and comes back: the download resumes.
        proxy.cut_after(3 << 20)
        roll_out(fleet, "4", "edge-b")
        wait_for(lambda: proxy.down, 60, "the download to be cut")
        wait_for(lambda: model_state(fleet, "edge-b").get("state") == "failed"
                 and "trying again" in (model_state(fleet, "edge-b").get("reason") or ""), 60,
                 f"B reports the outage ({b.log_tail()})")
        assert b.get("/api/v1/status").json()["model_change"]["state"] == "loading"
        part = b.workdir / "engines" / "fleet" / "gate" / "4" / "model.onnx.part"
        assert 0 < part.stat().st_size < len(versions["4"])
        assert b.get("/api/v1/status").json()["backend"] == "tensorrt"  # gate 1 keeps running
        proxy.restore()
        wait_for(lambda: model_state(fleet, "edge-b").get("version") == "4"
                 and model_state(fleet, "edge-b").get("state") == "running", 120, f"B runs gate 4 ({b.log_tail()})")
        assert "resuming the download of" in b.log_text()
        assert (b.workdir / "engines" / "fleet" / "gate" / "4" / "model.onnx").read_bytes() == versions["4"]
        assert _running(b) == "4"

        # 4. Restarted while the service is away: the staged version runs again, its files verified again.
        b.close()
        proxy.cut_after(0)
        wait_for(lambda: _cut(proxy), 10, "the fleet service to go away")
        _start(b)
        assert "using model gate version 4 as staged before" in b.log_text()
        assert "using the prebuilt engine" not in b.log_text() and "building TensorRT engine" not in b.log_text()
    finally:
        b.close()
        proxy.close()
