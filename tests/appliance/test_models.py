"""Two models on one appliance, in-process: each camera analysed by its own model, one model's
failure or reload leaving the other's camera running.

The appliance runs for real (the real YOLOv8n models with ONNX Runtime on the CPU, test://
cameras, MQTT off) behind the one change path; the one thing injected is *when* a model
finishes loading (``GatedFactory``), so "the other camera goes on while this model loads" is
observed without racing the clock.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import config_to_dict, load_config, parse_config
from edge_app.detect.base import DetectorError
from tests.support.changing_appliance import appliance_with_changes
from tests.support.model_files import models_dir  # noqa: F401  (a fixture)
from tests.appliance.test_apply import GatedFactory, _wait

CAMERA = "test://box?fps=5&width=320&height=240"


def _config(tmp_path: Path, general: Path, second: Path, **second_overrides) -> dict:
    return {
        "device_id": "dev",
        "cameras": [{"id": "yard", "source": CAMERA}, {"id": "gate", "source": CAMERA, "model": "second"}],
        "models": [{"name": "default", "path": str(general), "engine_dir": str(tmp_path / "engines")},
                   {"name": "second", "path": str(second), "engine_dir": str(tmp_path / "engines"), **second_overrides}],
        "mqtt": {"enabled": False},
        "api": {"enabled": False},
    }


@pytest.fixture
def start_appliance(tmp_path):
    started = []

    def start(data: dict, factory: GatedFactory = None):
        factory = factory or GatedFactory()
        config_path = tmp_path / "config.yaml"
        appliance, changes = appliance_with_changes(data, config_path, detector_factory=factory)
        started.append((appliance, factory))
        appliance.start()
        appliance.patch = changes.patch
        appliance.change_to = lambda new: changes.write(lambda current: new)
        appliance.config_path = config_path
        return appliance, factory

    yield start
    for appliance, factory in started:
        for gate in factory.gates.values():
            gate.set()
        appliance.stop()


def _frames_after(appliance, camera_id: str, count: int, what: str):
    """Wait for ``count`` more analysed frames of the camera; the last one."""
    frame = None
    for _ in range(count):
        after = frame.frame_id if frame is not None else -1
        frame = appliance.reads.wait_frame(camera_id, after, 30)
        assert frame is not None, f"no analysed frame of {camera_id} {what}"
    return frame


def _model(status, name):
    return next(m for m in status.models if m.name == name)


def test_each_camera_is_analysed_by_its_own_model(start_appliance, tmp_path, models_dir):
    appliance, factory = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx"))

    assert _frames_after(appliance, "yard", 2, "by the general model").model == "default"
    assert _frames_after(appliance, "gate", 2, "by the second model").model == "second"
    assert appliance.reads.latest_detections("gate")["model"] == "second"
    assert appliance.reads.latest_detections("yard")["model"] == "default"

    status = appliance.reads.status()
    assert [(m.name, m.state, m.cameras, m.backend) for m in status.models] == [
        ("default", "running", ["yard"], "onnxruntime"), ("second", "running", ["gate"], "onnxruntime")]
    assert _model(status, "second").path == str(models_dir / "int8.onnx")
    assert status.model.path == str(models_dir / "general.onnx"), "model: the first model, as before"
    detectors = {path: detector for path, detector in factory.made}
    assert len(detectors) == 2, "one detector per model"
    # Each model's own pipeline threads: batches never mix cameras of two models.
    import threading
    names = {t.name for t in threading.enumerate()}
    assert {"pipeline:gather", "pipeline:second:gather"} <= names, names


def test_a_corrupt_second_model_leaves_the_first_running_with_the_reason_in_status(start_appliance, tmp_path,
                                                                                    models_dir):
    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "corrupt.onnx"))

    _frames_after(appliance, "yard", 3, "while the second model is broken")
    status = appliance.reads.status()
    broken = _model(status, "second")
    assert broken.state == "failed" and broken.backend is None and broken.cameras == ["gate"]
    assert broken.error and "corrupt.onnx" in broken.error, broken.error
    assert _model(status, "default").state == "running"
    ready, reasons = appliance.reads.readiness()
    assert ready, reasons
    assert appliance.reads.latest_frame("gate") is None, "nothing analyses the camera of the broken model"
    assert {c.id: c.state for c in status.cameras}["gate"] == "streaming", "its camera still streams"


def test_an_appliance_whose_every_model_fails_does_not_start(tmp_path, models_dir):
    data = _config(tmp_path, models_dir / "corrupt.onnx", models_dir / "corrupt.onnx")
    appliance = Appliance(parse_config(data), detector_factory=GatedFactory())
    with pytest.raises(DetectorError, match="default: .*; second: "):
        appliance.start()
    appliance.stop()


def test_reloading_one_model_does_not_interrupt_the_other_models_camera(start_appliance, tmp_path, models_dir):
    factory = GatedFactory()
    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx"), factory)
    general = appliance.reads.status()
    yard_detector = dict(factory.made)[str(models_dir / "general.onnx")]
    gate = factory.gate(models_dir / "int8-v2.onnx")  # the new second model loads when the test says so

    result = appliance.patch({"models": [config_to_dict(appliance.current_config())["models"][0],
                                         {**config_to_dict(appliance.current_config())["models"][1],
                                          "path": str(models_dir / "int8-v2.onnx")}]})

    assert result.applying == ["models.second"]
    assert _model(appliance.reads.status(), "second").change.state == "loading"
    # While the second model loads, the first model's camera goes on, and so does the second's
    # camera on the second model's old detector.
    _frames_after(appliance, "yard", 3, "while the other model loads")
    _frames_after(appliance, "gate", 2, "on the old detector while its new one loads")
    gate.set()
    _wait(lambda: _model(appliance.reads.status(), "second").change.state == "applied", what="the new second model")
    status = appliance.reads.status()
    assert _model(status, "default").change is None, "the first model was not touched"
    assert dict(factory.made)[str(models_dir / "general.onnx")] is yard_detector
    assert yard_detector not in factory.closed
    assert _model(status, "second").path == str(models_dir / "int8-v2.onnx")
    assert _frames_after(appliance, "gate", 2, "on the new detector").model == "second"
    assert general.models[0].cameras == ["yard"]


def test_a_broken_model_added_later_is_reported_and_kept_in_the_file(start_appliance, tmp_path, models_dir):
    data = _config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx")
    appliance, _ = start_appliance(data)
    current = config_to_dict(appliance.current_config())
    current["models"].append({"name": "third", "path": str(models_dir / "corrupt.onnx"),
                              "engine_dir": str(tmp_path / "engines")})
    current["cameras"].append({"id": "door", "source": CAMERA, "model": "third"})

    result = appliance.change_to(current)

    assert result.applying == ["models.third"]
    _wait(lambda: _model(appliance.reads.status(), "third").state == "failed", what="the third model to fail")
    third = _model(appliance.reads.status(), "third")
    assert "corrupt.onnx" in third.error and third.cameras == ["door"]
    # Nothing ran before it, so nothing to go back to: the file keeps it, the status says why.
    assert [m.name for m in load_config(appliance.config_path).models] == ["default", "second", "third"]
    _frames_after(appliance, "yard", 2, "after the third model failed")
    _frames_after(appliance, "gate", 2, "after the third model failed")


def test_a_failed_change_of_one_model_puts_back_only_that_model(start_appliance, tmp_path, models_dir):
    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx"))
    current = config_to_dict(appliance.current_config())
    current["models"][1]["path"] = str(models_dir / "corrupt.onnx")
    current["models"][0]["conf_threshold"] = 0.4

    appliance.change_to(current)

    _wait(lambda: _model(appliance.reads.status(), "second").change.state == "failed", what="the failed load")
    saved = load_config(appliance.config_path).model_configs()
    assert saved["second"].path == str(models_dir / "int8.onnx"), "the second model went back to the one that runs"
    assert saved["default"].conf_threshold == 0.4, "the other model's change stays"
    assert _model(appliance.reads.status(), "second").state == "running"


def test_removing_a_model_and_moving_its_camera_to_another(start_appliance, tmp_path, models_dir):
    factory = GatedFactory()
    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx"), factory)
    _frames_after(appliance, "gate", 1, "by the second model")
    current = config_to_dict(appliance.current_config())
    current["models"] = current["models"][:1]
    current["cameras"][1]["model"] = "default"

    result = appliance.change_to(current)

    assert result.applying == []
    second = dict(factory.made)[str(models_dir / "int8.onnx")]
    _wait(lambda: second in factory.closed, what="the removed model to be closed")
    _wait(lambda: appliance.reads.latest_frame("gate") is not None and appliance.reads.latest_frame("gate").model == "default",
          what="the camera analysed by the model it moved to")
    assert [m.name for m in appliance.reads.status().models] == ["default"]
    assert appliance.reads.status().models[0].cameras == ["yard", "gate"]


def test_a_model_that_failed_at_start_is_loaded_again_once_its_file_is_fixed(start_appliance, tmp_path, models_dir,
                                                                             int8_model_path):
    import time

    from edge_app.appliance.model_change import BROKEN_RELOAD_EVERY_S

    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "corrupt.onnx"))
    assert _model(appliance.reads.status(), "second").state == "failed"
    appliance._models.tick(time.monotonic())
    assert _model(appliance.reads.status(), "second").state == "failed", "not loaded again at once: a loop of loads"
    shutil.copy(int8_model_path, models_dir / "corrupt.onnx")  # the file is put right

    appliance._models.tick(time.monotonic() + BROKEN_RELOAD_EVERY_S + 1)  # as the stats thread will, later

    _wait(lambda: _model(appliance.reads.status(), "second").state == "running", what="the second model loaded again")
    assert _frames_after(appliance, "gate", 2, "once its model runs").model == "second"
    assert _model(appliance.reads.status(), "second").error is None


def test_the_stats_payload_names_each_cameras_model(start_appliance, tmp_path, models_dir):
    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx"))
    cameras = appliance.reads.stats_payload()["cameras"]
    assert {cid: figures["model"] for cid, figures in cameras.items()} == {"yard": "default", "gate": "second"}


def test_a_patch_addressing_one_model_by_name_reloads_only_that_model(start_appliance, tmp_path, models_dir):
    factory = GatedFactory()
    appliance, _ = start_appliance(_config(tmp_path, models_dir / "general.onnx", models_dir / "int8.onnx"), factory)
    yard_detector = dict(factory.made)[str(models_dir / "general.onnx")]
    before = config_to_dict(appliance.current_config())["models"]

    result = appliance.patch({"models": {"second": {"path": str(models_dir / "int8-v2.onnx"), "conf_threshold": 0.4}}})

    assert result.applying == ["models.second"]
    _frames_after(appliance, "yard", 2, "while the other model loads")
    _wait(lambda: _model(appliance.reads.status(), "second").change.state == "applied", what="the new second model")
    after = config_to_dict(appliance.current_config())["models"]
    assert after[0] == before[0] and _model(appliance.reads.status(), "default").change is None
    assert after[1] == {**before[1], "path": str(models_dir / "int8-v2.onnx"), "conf_threshold": 0.4}
    assert yard_detector not in factory.closed
    assert load_config(appliance.config_path).models[1].path == str(models_dir / "int8-v2.onnx")
    from edge_app.config_change.changes import ConfigRefused
    with pytest.raises(ConfigRefused) as refused:
        appliance.patch({"models": {"third": {"conf_threshold": 0.4}}})
    assert [(p.loc, p.msg) for p in refused.value.problems] == [("models.third", "there is no model named 'third'")]
