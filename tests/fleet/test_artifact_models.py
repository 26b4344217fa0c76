"""A fleet model as one of several models on a real ``edge-app run`` (ONNX Runtime, the real YOLOv8n).

The appliance runs two models: ``general`` (a local file) for the yard camera and ``plates``
(the fleet's model ``gate``) for the gate camera. Rollouts from the real fleet service address
the fleet model, whichever of the appliance's models runs it: only ``plates`` changes, in its
own background change, while the yard camera is analysed all along by ``general``; a rollback
is a rollout of the previous version; a download that fails its digest keeps ``plates`` on the
version it ran. ``models_state`` is keyed by the fleet's name of the model (``gate``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from testkit.appliance import ApplianceProcess
from tests.fleet.artifact_helpers import (KEYS, TOKENS, artifact_fleet, model_state, roll_out, sha,
                                         stamped_versions, upload)
from testkit.net import free_port
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

SOURCE = "test://box?fps=2&width=320&height=240"


@pytest.fixture
def versions(tmp_path, model_path):
    """gate versions 1..3: the same network, told apart by a metadata entry (so by their SHA-256)."""
    return stamped_versions(model_path, tmp_path, ("1", "2", "3"))


def _state(fleet) -> dict:
    return model_state(fleet, "edge-b")


def _rollout(fleet, version: str) -> None:
    roll_out(fleet, version, "edge-b")


def _models(app: ApplianceProcess) -> dict:
    return {m["name"]: m for m in app.get("/api/v1/status").json()["models"]}


def _analysed(app: ApplianceProcess, camera: str) -> int:
    cameras = app.get("/api/v1/status").json()["cameras"]
    return next(c["frames_analyzed"] for c in cameras if c["id"] == camera)


def test_a_rollout_changes_only_the_model_running_the_fleet_model(fleet_factory, mosquitto_broker, tmp_path,
                                                                   model_path, versions):
    fleet = artifact_fleet(fleet_factory, tmp_path, max_upload_mb=64, artifacts={"max_mb": 512})
    for version, onnx in versions.items():
        assert upload(fleet, "gate", version, onnx).status_code == 201
    workdir = tmp_path / "edge-b"
    workdir.mkdir()
    engines = str(workdir / "engines")
    config = {"device_id": "edge-b",
              "cameras": [{"id": "yard", "source": SOURCE, "model": "general"},
                          {"id": "gate", "source": SOURCE, "model": "plates"}],
              "models": [{"name": "general", "path": str(model_path), "backend": "onnxruntime", "engine_dir": engines},
                         {"name": "plates", "path": str(model_path), "backend": "onnxruntime", "engine_dir": engines,
                          "artifact": {"name": "gate", "version": "1"}}],
              "events": {"dir": str(workdir / "events")},
              "mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port, "topic_prefix": fleet.prefix},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "fleet": {"remote_config": True, "desired_key": KEYS["edge-b"], "url": fleet.url,
                        "token": TOKENS["edge-b"]}}
    app = ApplianceProcess(config, workdir).start()
    staged = Path(engines) / "fleet" / "gate"
    try:
        wait_for(lambda: _state(fleet) == {"version": "1", "state": "running", "progress": None, "reason": None}, 60,
                 f"gate 1 running ({app.log_tail()})")
        wait_for(lambda: _models(app)["plates"]["state"] == "running", 30, "plates runs gate 1")
        assert (staged / "1" / "model.onnx").read_bytes() == versions["1"]
        wait_for(lambda: _analysed(app, "yard") > 0 and _analysed(app, "gate") > 0, 60, "both cameras analysed")

        for version in ("2", "1"):  # forward, then the rollback: a rollout of the previous version
            yard_before = _analysed(app, "yard")
            _rollout(fleet, version)
            wait_for(lambda: _state(fleet).get("version") == version and _state(fleet).get("state") == "running", 60,
                     f"gate {version} running ({app.log_tail()})")
            wait_for(lambda: (_models(app)["plates"]["change"] or {}).get("state") == "applied", 30,
                     f"plates' change to gate {version} done")
            assert (staged / version / "model.onnx").read_bytes() == versions[version]
            shown = app.get("/api/v1/config").json()
            assert shown["models"][1]["artifact"] == {"name": "gate", "version": version}
            assert shown["models"][0] == {**shown["models"][0], "name": "general", "path": str(model_path)}
            assert "artifact" not in shown["models"][0] or shown["models"][0]["artifact"] is None
            assert "model" not in shown or shown["model"] is None
            # general was never reloaded, and its camera went on being analysed
            assert _models(app)["general"]["change"] is None
            wait_for(lambda: _analysed(app, "yard") > yard_before, 30, "the yard camera analysed meanwhile")

        # Version 3's ONNX corrupted on the service's disk: plates keeps gate 1, and says why.
        blob = next(p for p in (tmp_path / "artifacts").rglob("*") if p.is_file() and sha(versions["3"]) in p.name)
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF
        blob.chmod(0o644)
        blob.write_bytes(bytes(data))
        _rollout(fleet, "3")
        wait_for(lambda: _state(fleet).get("version") == "3" and _state(fleet).get("state") == "failed", 60,
                 f"gate 3 failed ({app.log_tail()})")
        assert "does not match the SHA-256" in _state(fleet)["reason"]
        wait_for(lambda: app.get("/api/v1/config").json()["models"][1]["artifact"]["version"] == "1", 30,
                 "plates' configuration back to gate 1")
        assert _models(app)["plates"]["state"] == "running" and _models(app)["general"]["state"] == "running"
        assert not (staged / "3" / "model.onnx").exists()
        yard_before, gate_before = _analysed(app, "yard"), _analysed(app, "gate")
        wait_for(lambda: _analysed(app, "yard") > yard_before and _analysed(app, "gate") > gate_before, 30,
                 "both cameras analysed after the failed rollout")
    finally:
        app.close()
