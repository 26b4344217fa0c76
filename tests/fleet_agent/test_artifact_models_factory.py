"""The fleet detector factory with several models: each model with an ``artifact`` fetched on its own.

A real ``Stager`` and ``FleetClient`` against a loopback port nobody listens on (the fleet
service away); the detector made is a marker, since only which section it was made from matters.
"""
from __future__ import annotations

import threading

from edge_app.config.file import parse_config
from edge_app.detect.base import DetectorError
from edge_app.fleet_agent.artifacts_models import FleetModels
from edge_app.fleet_agent.artifacts_state import ModelsState
from tests.support.net import free_port
from tests.support.waiting import wait_for


def _config(tmp_path, plates_version: str):
    return parse_config({
        "device_id": "edge-b",
        "cameras": [{"id": "yard", "source": "test://bars", "model": "general"},
                    {"id": "gate", "source": "test://bars", "model": "plates"}],
        "models": [{"name": "general", "path": "models/general.onnx", "engine_dir": str(tmp_path),
                    "artifact": {"name": "people", "version": "1"}},
                   {"name": "plates", "path": "models/plates.onnx", "engine_dir": str(tmp_path),
                    "artifact": {"name": "gate", "version": plates_version}}],
        "fleet": {"url": f"http://127.0.0.1:{free_port()}", "token": "device-token-0123456789abcdef",
                  "desired_key": "k" * 40},
    })


def test_each_fleet_model_falls_back_once_and_retries_against_its_own_section(tmp_path):
    current = {"config": _config(tmp_path, "1")}
    state = ModelsState()
    made = []
    models = FleetModels(lambda model, **options: made.append(model.path) or model.path, lambda: current["config"],
                         state, retry_first_s=0.05)
    general, plates = current["config"].models
    # At start each model's first fetch failing falls back to its own path: one model's start is
    # not another's.
    assert models(general) == "models/general.onnx"
    assert models(plates) == "models/plates.onnx"
    assert set(state.snapshot()) == {"people", "gate"}
    assert "running models/plates.onnx until it is fetched" in state.get("gate").reason

    # A later change of plates keeps trying, until the configuration asks plates for another version.
    errors = []

    def change() -> None:
        try:
            models(plates, cancel=threading.Event())
        except DetectorError as err:
            errors.append(str(err))

    worker = threading.Thread(target=change, name="test:change")
    worker.start()
    try:
        wait_for(lambda: "trying again" in (state.get("gate").reason or ""), 10, "plates to retry")
        current["config"] = _config(tmp_path, "2")
        worker.join(10)
        assert not worker.is_alive()
    finally:
        models.close()
        worker.join(10)
    assert errors and "another version was asked for meanwhile" in errors[0]
    assert made == ["models/general.onnx", "models/plates.onnx"]
    assert state.get("people").version == "1"

