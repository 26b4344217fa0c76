"""Each model's TensorRT engine build in its own ``status.models[].engine_build`` (stand-in TensorRT, NOT TensorRT).

Two models switched to TensorRT build at once, each on its own background load. The stand-in's
build waits at its first progress step until the test lets that model's build go on, so "both
build at once" and "one finished, the other still builds" are observed without racing the clock.
``status.engine_build`` stays for the clients that read it: the build started last among those
still running, else the build started last.
"""
from __future__ import annotations

import shutil
import threading

import pytest

from edge_app.config.file import config_to_dict
from tests.support.changing_appliance import appliance_with_changes
from testkit.waiting import wait_for
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice

CAMERA = "test://box?fps=2&width=160&height=120"


@pytest.fixture
def held_builds(standin_trt, monkeypatch):
    """Per model name, an event its build waits for at every progress step (the build runs on the
    model's load thread, ``model:load:<name>``); builds of other threads go on."""
    import edge_app.cuda
    from edge_app.detect.tensorrt import backend
    from tensorrt import _build_steps

    monkeypatch.setattr(edge_app.cuda, "available_adapters", lambda: ["host-memory stand-in"])
    monkeypatch.setattr(backend, "open_device", lambda: HostMemoryCudaDevice())
    real_step = _build_steps._Monitor.step
    held = {"first": threading.Event(), "second": threading.Event()}

    def held_step(self, name, step):
        event = held.get(threading.current_thread().name.rpartition(":")[2])
        if event is not None and not event.wait(30):
            raise AssertionError("the test never let the build go on")
        return real_step(self, name, step)

    monkeypatch.setattr(_build_steps._Monitor, "step", held_step)
    yield held
    for event in held.values():
        event.set()


@pytest.fixture
def two_models(tmp_path, model_path):
    paths = {name: tmp_path / f"{name}.onnx" for name in ("first", "second")}
    for path in paths.values():
        shutil.copy(model_path, path)
    data = {
        "device_id": "dev",
        "cameras": [{"id": "yard", "source": CAMERA, "detect": False, "model": "first"},
                    {"id": "gate", "source": CAMERA, "detect": False, "model": "second"}],
        "models": [{"name": name, "path": str(path), "backend": "onnxruntime", "max_batch": 1,
                    "engine_process": False, "engine_dir": str(tmp_path / "engines")} for name, path in paths.items()],
        "mqtt": {"enabled": False},
        "api": {"enabled": False},
    }
    appliance, changes = appliance_with_changes(data, tmp_path / "config.yaml")
    appliance.start()
    try:
        yield appliance, changes, paths
    finally:
        appliance.stop()


def _to_tensorrt(changes, name: str) -> None:
    def build(current):
        data = config_to_dict(current)
        next(m for m in data["models"] if m["name"] == name)["backend"] = "tensorrt"
        return data

    changes.write(build)


def _builds(appliance):
    status = appliance.reads.status()
    return {m.name: m.engine_build for m in status.models}, status.engine_build


def _state(appliance, name):
    build = _builds(appliance)[0][name]
    return build.state if build is not None else None


def test_two_models_building_at_once_each_show_their_own_build(held_builds, two_models):
    appliance, changes, paths = two_models
    assert _builds(appliance) == ({"first": None, "second": None}, None), "ONNX Runtime builds no engine"

    _to_tensorrt(changes, "first")
    wait_for(lambda: _state(appliance, "first") == "building", 30, "the first model's build to begin")
    _to_tensorrt(changes, "second")
    wait_for(lambda: _state(appliance, "second") == "building", 30, "the second model's build to begin")
    models, latest = _builds(appliance)
    assert models["first"].state == "building", "the second build must not replace the first's progress"
    assert models["first"].model == str(paths["first"]) and models["second"].model == str(paths["second"])
    assert latest["model"] == str(paths["second"]), "status.engine_build: the build started last"

    held_builds["second"].set()
    wait_for(lambda: _state(appliance, "second") == "done", 30, "the second model's build to finish")
    models, latest = _builds(appliance)
    assert models["first"].state == "building" and models["second"].percent == 100.0
    assert latest["model"] == str(paths["first"]) and latest["state"] == "building", \
        "status.engine_build: a build still running comes before one that finished"

    held_builds["first"].set()
    wait_for(lambda: _state(appliance, "first") == "done", 30, "the first model's build to finish")
    wait_for(lambda: [m.backend for m in appliance.reads.status().models] == ["tensorrt", "tensorrt"], 30,
             "both models to run their engines")
    assert _builds(appliance)[1]["model"] == str(paths["second"]), "none builds: the build started last"
    assert appliance.reads.status().to_dict()["models"][0]["engine_build"]["state"] == "done"
