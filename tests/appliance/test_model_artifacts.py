"""Which fleet artifact each model runs, in ``status.models``: the version whose staged files run
(not the one the configuration asks for while it loads), none for a plain local model, and none,
said so, for a model that runs its local ``path`` because its fetch failed at start.

The appliance runs for real (ONNX Runtime on the CPU, test:// cameras, MQTT off) with the real
fleet detector factory; only the fleet service is replaced, by a stager that stages a copy of
a real model for ``people`` (holding version 3 back until the test lets it through) and finds
the service away for every other fleet model.
"""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from edge_app.config.file import config_to_dict
from edge_app.detect.factory import create_detector
from edge_app.fleet_agent.artifacts.client import FleetUnreachable
from edge_app.fleet_agent.artifacts.models import FleetModels
from edge_app.fleet_agent.artifacts.stage import StagedModel, stage_dir
from edge_app.fleet_agent.artifacts.state import ModelState, ModelsState
from edge_app.reporting.protocol import ArtifactReport
from tests.support.changing_appliance import appliance_with_changes
from tests.support.model_files import models_dir  # noqa: F401  (a fixture)
from testkit.waiting import wait_for

CAMERA = "test://box?fps=2&width=160&height=120"


class _Stager:
    """Stages ``onnx`` as every version of ``people``; every other fleet model: the service is away."""

    def __init__(self, onnx: Path) -> None:
        self._onnx = onnx
        self.held = {"3": threading.Event(), "4": threading.Event()}  # staged once the test sets their event
        self.loaded = {"3": threading.Event()}  # versions whose loaded detector is handed back once set
        self.closed = {"3": threading.Event()}  # set when the detector of that version is closed

    def stage(self, model, cancel):
        artifact = model.artifact
        if artifact.name != "people":
            raise FleetUnreachable("the fleet service is away")
        held = self.held.get(artifact.version)
        if held is not None and not held.wait(30):
            raise FleetUnreachable("the test never let the version through")
        folder = stage_dir(model.engine_dir, artifact.name, artifact.version)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(self._onnx, folder / "model.onnx")
        return StagedModel(folder, folder / "model.onnx", None, manifest=None), None


class _LoadsHeldBack:
    """``create_detector``, but the detector of a held version of ``people`` is handed back only once
    the test lets it (a newer change can cancel it meanwhile), and its close is seen."""

    def __init__(self, stager: _Stager) -> None:
        self._stager = stager

    def __call__(self, model, **options):
        detector = create_detector(model, **options)
        version = Path(model.path).parent.name
        if Path(model.path).parent.parent.name == "people" and version in self._stager.loaded:
            close = detector.close
            detector.close = lambda: (self._stager.closed[version].set(), close())
            assert self._stager.loaded[version].wait(30), "the test never let the loaded version through"
        return detector


@pytest.fixture
def fleet_appliance(tmp_path, models_dir):
    engines = str(tmp_path / "engines")
    data = {
        "device_id": "dev",
        "cameras": [{"id": "yard", "source": CAMERA, "detect": False},
                    {"id": "gate", "source": CAMERA, "detect": False, "model": "plates"},
                    {"id": "door", "source": CAMERA, "detect": False, "model": "local"}],
        "models": [{"name": "default", "path": str(models_dir / "general.onnx"), "engine_dir": engines,
                    "artifact": {"name": "people", "version": "2"}},
                   {"name": "plates", "path": str(models_dir / "int8.onnx"), "engine_dir": engines,
                    "artifact": {"name": "gate", "version": "1"}},
                   {"name": "local", "path": str(models_dir / "general.onnx"), "engine_dir": engines}],
        "mqtt": {"enabled": False},
        "api": {"enabled": False},
    }
    stager = _Stager(models_dir / "general.onnx")
    holder = {}
    factory = FleetModels(_LoadsHeldBack(stager), lambda: holder["appliance"].current_config(), ModelsState(),
                          stager=stager)
    appliance, changes = appliance_with_changes(data, tmp_path / "config.yaml", detector_factory=factory,
                                                on_model_running=factory.running)
    holder["appliance"] = appliance
    appliance.start()
    try:
        yield appliance, changes, stager, factory.state
    finally:
        for held in [*stager.held.values(), *stager.loaded.values()]:
            held.set()
        factory.close()
        appliance.stop()


def _models(appliance):
    return {m.name: m for m in appliance.reads.status().models}


def test_status_names_the_fleet_artifact_each_model_runs(fleet_appliance, models_dir):
    appliance, changes, stager, _state = fleet_appliance
    models = _models(appliance)
    assert [models[name].state for name in ("default", "plates", "local")] == ["running"] * 3
    assert models["default"].artifact == ArtifactReport(name="people", version="2")
    assert models["default"].fallback is None
    assert models["default"].path == str(models_dir / "general.onnx"), "path stays the configured fallback"
    # The fetch failed at start: the local path runs, and status says so rather than naming the artifact.
    assert models["plates"].artifact is None
    assert "gate" in models["plates"].fallback and "version 1" in models["plates"].fallback
    assert str(models_dir / "int8.onnx") in models["plates"].fallback
    assert models["local"].artifact is None and models["local"].fallback is None
    assert appliance.reads.status().to_dict()["models"][0]["artifact"] == {"name": "people", "version": "2"}

    # A rollout to version 3: until it is staged and loaded, version 2 is what runs.
    def to_version_3(current):
        data = config_to_dict(current)
        data["models"][0]["artifact"]["version"] = "3"
        return data

    changes.write(to_version_3)
    assert _models(appliance)["default"].change.state == "loading"
    assert _models(appliance)["default"].artifact == ArtifactReport(name="people", version="2")
    stager.held["3"].set()
    stager.loaded["3"].set()
    wait_for(lambda: _models(appliance)["default"].artifact == ArtifactReport(name="people", version="3"), 60,
             "version 3 to run")
    # the change reports "applied" once its install has returned, a moment after the swap
    wait_for(lambda: _models(appliance)["default"].change.state == "applied", 10, "the change to say applied")


def _rollout(changes, version):
    def to_version(current):
        data = config_to_dict(current)
        data["models"][0]["artifact"]["version"] = version
        return data
    changes.write(to_version)


def test_models_state_says_running_only_for_the_version_swapped_in(fleet_appliance):
    """A version loaded but cancelled by a newer rollout before its swap never ran: models_state
    (what the fleet shows for the rollout) must go on naming the version that runs."""
    appliance, changes, stager, state = fleet_appliance
    assert state.get("people") == ModelState("2", "running")
    _rollout(changes, "3")
    stager.held["3"].set()  # version 3 is staged and loaded; its detector waits to be handed back
    _rollout(changes, "4")  # meanwhile version 4 is asked for: version 3's change is cancelled
    stager.loaded["3"].set()
    assert stager.closed["3"].wait(30), "the cancelled version 3 was never closed"
    assert _models(appliance)["default"].artifact == ArtifactReport(name="people", version="2")
    assert state.get("people") == ModelState("2", "running"), "version 3 never ran"
    stager.held["4"].set()
    wait_for(lambda: state.get("people") == ModelState("4", "running"), 60, "version 4 to be reported running")
    assert _models(appliance)["default"].artifact == ArtifactReport(name="people", version="4")
