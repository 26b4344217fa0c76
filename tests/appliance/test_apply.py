"""Live reconfiguration of the appliance, in-process: a new model is a background job.

The appliance runs for real here (test:// cameras, the real YOLOv8n models with ONNX Runtime,
MQTT switched off) behind the one change path (``ConfigChanges``, which saves the file); the one
thing injected is *when* a model finishes loading: the detector factory is the real
``create_detector`` behind a gate the test opens, so "the request has been answered while the
model is still loading" can be observed without racing the clock.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import ConfigFile, config_to_dict, load_config, parse_config, save_config
from edge_app.config_change.changes import ChangeRules
from edge_app.detect.factory import create_detector


class GatedFactory:
    """``create_detector`` that waits for ``open`` (per model path) and records what it made."""

    def __init__(self):
        self.gates = {}
        self.made = []
        self.closed = []

    def gate(self, path: Path) -> threading.Event:
        return self.gates.setdefault(str(path), threading.Event())

    def __call__(self, model, **options):
        gate = self.gates.get(str(model.path))
        if gate is not None and not gate.wait(30):
            raise AssertionError("the test never opened the gate")
        detector = create_detector(model, **options)
        real_close = detector.close

        def close():
            self.closed.append(detector)
            real_close()

        detector.close = close
        self.made.append((str(model.path), detector))
        return detector


def _config(model: Path, tmp_path: Path, **model_overrides):
    return parse_config({
        "device_id": "dev",
        "cameras": [{"id": "cam", "source": "test://box?fps=10&width=320&height=240"}],
        "model": {"path": str(model), "engine_dir": str(tmp_path / "engines"), **model_overrides},
        "mqtt": {"enabled": False},
        # The models of these tests live in other folders than the first one.
        "api": {"enabled": False, "allow_unsafe_sources": True},
    })


def _wait(predicate, timeout_s=30.0, what="the condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def running(tmp_path, model_path):
    factory = GatedFactory()
    config_path = tmp_path / "config.yaml"
    config = _config(model_path, tmp_path)
    save_config(config, config_path)
    appliance = Appliance(config, detector_factory=factory, change_rules=ChangeRules(config_file=ConfigFile(config_path)))
    changes = appliance.changes
    appliance.start()
    appliance.change_to = lambda new: changes.write(lambda current: config_to_dict(new))  # the test's way in
    yield appliance, factory, config_path
    for gate in factory.gates.values():
        gate.set()
    appliance.stop()


def _with_model(appliance, model: Path, **changes):
    config = appliance.current_config()
    return config.model_copy(update={"model": config.model.model_copy(update={"path": str(model), **changes})})


def _with_detect(appliance, on: bool):
    config = appliance.current_config()
    return config.model_copy(update={"cameras": [c.model_copy(update={"detect": on}) for c in config.cameras]})


def test_a_new_model_is_answered_at_once_and_swapped_in_when_loaded(running, int8_model_path, model_path):
    appliance, factory, config_path = running
    gate = factory.gate(int8_model_path)
    first = factory.made[0][1]

    result = appliance.change_to(_with_model(appliance, int8_model_path))

    assert result.applying == ["model"]
    assert load_config(config_path).model.path == str(int8_model_path), "saved before the load"
    status = appliance.reads.status()
    assert status.model_change.state == "loading" and status.model_change.path == str(int8_model_path)
    assert status.model.path == str(int8_model_path)
    assert appliance._detector is first, "the old model keeps running while the new one loads"
    analysed = status.cameras[0].frames_analyzed
    _wait(lambda: appliance.reads.status().cameras[0].frames_analyzed > analysed + 3, what="frames analysed meanwhile")

    gate.set()
    _wait(lambda: appliance.reads.status().model_change.state == "applied", what="the new model")
    assert appliance._detector is factory.made[-1][1] and factory.made[-1][0] == str(int8_model_path)
    _wait(lambda: first in factory.closed, what="the old model to be closed after its last batch")
    analysed = appliance.reads.status().cameras[0].frames_analyzed
    _wait(lambda: appliance.reads.status().cameras[0].frames_analyzed > analysed + 3, what="frames on the new model")


def test_a_model_that_fails_to_load_leaves_the_old_one_running_and_in_the_file(running, tmp_path, model_path):
    appliance, factory, config_path = running
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx model at all")
    first = appliance._detector

    result = appliance.change_to(_with_model(appliance, broken))

    assert result.applying == ["model"]
    _wait(lambda: appliance.reads.status().model_change.state == "failed", what="the failure")
    report = appliance.reads.status().model_change
    assert str(broken) in report.path and report.error
    assert appliance._detector is first and first not in factory.closed
    assert appliance.current_config().model.path == str(model_path)
    assert load_config(config_path).model.path == str(model_path), "the file agrees with what runs"


def test_a_newer_model_change_replaces_one_still_loading(running, int8_model_path, model_path, tmp_path):
    appliance, factory, _ = running
    slow = factory.gate(int8_model_path)
    appliance.change_to(_with_model(appliance, int8_model_path))
    superseded = appliance.reads.status().model_change

    copy = tmp_path / "second.onnx"
    copy.write_bytes(Path(model_path).read_bytes())
    appliance.change_to(_with_model(appliance, copy))
    _wait(lambda: appliance.reads.status().model_change.state == "applied", what="the newer model")
    assert appliance.reads.status().model.path == str(copy)

    slow.set()
    _wait(lambda: len(factory.closed) >= 2, what="the superseded load to be closed")
    assert superseded.path == str(int8_model_path)
    assert factory.made[-1][0] == str(int8_model_path) and factory.made[-1][1] in factory.closed
    assert factory.made[-1][1] is not appliance._detector


def test_settings_changed_while_a_model_loads_apply_to_the_new_model(running, int8_model_path):
    appliance, factory, _ = running
    gate = factory.gate(int8_model_path)
    appliance.change_to(_with_model(appliance, int8_model_path))
    config = appliance.current_config()
    appliance.change_to(config.model_copy(update={"model": config.model.model_copy(
        update={"conf_threshold": 0.6, "classes": ["person"]})}))

    gate.set()
    _wait(lambda: appliance.reads.status().model_change.state == "applied", what="the new model")
    assert appliance._detector.conf_threshold == 0.6 and appliance._detector.classes == ("person",)


def test_detection_switched_off_keeps_the_camera_streaming_for_live_view(running):
    appliance, _, config_path = running
    _wait(lambda: appliance.reads.status().cameras[0].frames_analyzed > 2, what="analysed frames")
    frames_before = appliance.reads.status().cameras[0].frames_captured

    appliance.change_to(_with_detect(appliance, False))

    assert load_config(config_path).cameras[0].detect is False, "saved like a configuration change"
    analysed = appliance.reads.status().cameras[0].frames_analyzed
    live = appliance.reads.wait_frame("cam", -1, 5.0)
    newer = appliance.reads.wait_frame("cam", live.frame_id, 5.0)
    assert newer is not None and newer.frame_id != live.frame_id and len(newer.detections) == 0
    status = appliance.reads.status().cameras[0]
    assert status.state == "streaming" and status.frames_captured > frames_before
    time.sleep(0.5)
    assert appliance.reads.status().cameras[0].frames_analyzed <= analysed + 1, "no analysis while off"

    appliance.change_to(_with_detect(appliance, True))
    _wait(lambda: appliance.reads.status().cameras[0].frames_analyzed > analysed + 3, what="analysis back on")


def test_a_change_back_to_the_running_model_cancels_the_load_in_progress(running, int8_model_path, model_path):
    appliance, factory, config_path = running
    gate = factory.gate(int8_model_path)
    first = appliance._detector
    appliance.change_to(_with_model(appliance, int8_model_path))

    result = appliance.change_to(_with_model(appliance, model_path, conf_threshold=0.6))

    assert result.applying == [], "the running model needs no load"
    assert appliance._detector is first and first.conf_threshold == 0.6
    assert load_config(config_path).model.path == str(model_path)
    gate.set()
    _wait(lambda: appliance.reads.status().model_change.state == "cancelled", what="the superseded load to end")
    assert appliance._detector is first and factory.made[-1][1] in factory.closed


def _with_tracker_processes(appliance, processes):
    config = appliance.current_config()
    return config.model_copy(update={"tracking": config.tracking.model_copy(update={"processes": processes})})


def _spawned_children():
    import psutil

    return {child.pid: child for child in psutil.Process().children()
            if any("spawn_main" in part for part in child.cmdline())}


def test_status_says_how_many_tracker_processes_run_and_counts_one_killed(running):
    """tracking.processes as a user reads it in /api/v1/status and /metrics: the children in use,
    and a child killed from outside counted once as given up, while the camera goes on."""
    import os
    import signal

    appliance, _, _ = running
    from edge_app.appliance.analysis import tracker_processes

    assert appliance.reads.status().tracking.processes == tracker_processes(appliance.current_config())  # auto
    before = set(_spawned_children())
    appliance.change_to(_with_tracker_processes(appliance, 1))
    _wait(lambda: appliance.reads.status().tracking.processes == 1, what="one tracker process in the status")
    _wait(lambda: set(_spawned_children()) - before, what="the tracker child to start on the next frame")
    (child,) = set(_spawned_children()) - before
    os.kill(child, signal.SIGKILL)
    _wait(lambda: appliance.reads.status().tracking.restarts == 1, what="the killed child counted")
    analysed = appliance.reads.status().cameras[0].frames_analyzed
    _wait(lambda: appliance.reads.status().cameras[0].frames_analyzed > analysed + 3, what="frames after the kill")
    _wait(lambda: set(_spawned_children()) - before - {child}, what="a new tracker child")
    status = appliance.reads.status().tracking
    assert (status.processes, status.restarts) == (1, 1)
    appliance.change_to(_with_tracker_processes(appliance, 0))
    _wait(lambda: appliance.reads.status().tracking.processes == 0, what="the trackers back in the process")
    assert appliance.reads.status().tracking.restarts == 1  # counted since the start, not since the last change
