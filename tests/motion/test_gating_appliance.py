"""Motion gating in the running appliance (in-process, a test:// camera, the real YOLOv8n on ONNX
Runtime, MQTT off): a still picture reaches the model on keepalive only, its live view keeps
moving, and a configuration change of the masks or of motion.enabled applies without a restart."""
from __future__ import annotations

import time

import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import config_to_dict, parse_config


def _config(model_path, tmp_path, source, motion=None):
    return parse_config({
        "device_id": "dev",
        "cameras": [{"id": "cam", "source": source}],
        "model": {"path": str(model_path), "engine_dir": str(tmp_path / "engines")},
        "mqtt": {"enabled": False},
        "api": {"enabled": False, "allow_unsafe_sources": True},
        "motion": {"keepalive_s": 2.0, **(motion or {})},
    })


def _wait(predicate, timeout_s=20.0, what="the condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def bars(model_path, tmp_path):
    appliance = Appliance(_config(model_path, tmp_path, "test://bars?fps=10&width=320&height=240"))
    appliance.start()
    yield appliance
    appliance.stop()


def test_a_still_picture_without_objects_is_analysed_on_keepalive_and_its_live_view_moves(bars):
    camera = _wait(lambda: (lambda c: c if c.frames_captured >= 40 else None)(bars.reads.cameras()[0]), what="4 s of frames")
    assert camera.motion is not None and camera.motion.motion is False
    assert 1 <= camera.frames_analyzed <= 3, camera  # 4 s at 10 fps, keepalive 2 s: the first frame and a keepalive or two
    assert camera.motion.frames_skipped >= 10 and camera.motion.last_reason in ("idle", "keepalive")
    # live view: frames the gate looked at (5 a second while idle), not only the analysed ones
    seen = set()
    after = 0
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        frame = bars.reads.wait_frame("cam", after, 1.0)
        if frame is not None:
            seen.add(frame.frame_id)
            after = frame.frame_id
    assert len(seen) >= 5, sorted(seen)


def test_switching_gating_off_lets_every_frame_through_without_a_restart(bars, model_path, tmp_path):
    _wait(lambda: bars.reads.cameras()[0].frames_captured >= 10, what="frames")
    reconnects = bars.reads.cameras()[0].reconnects
    captured = bars.reads.cameras()[0].frames_captured
    gating_off = _config(model_path, tmp_path, "test://bars?fps=10&width=320&height=240", {"enabled": False})
    bars.changes.write(lambda running: config_to_dict(gating_off))
    analysed = bars.reads.cameras()[0].frames_analyzed
    _wait(lambda: bars.reads.cameras()[0].frames_analyzed >= analysed + 10, what="every frame analysed")
    camera = bars.reads.cameras()[0]
    assert camera.motion is None and camera.reconnects == reconnects and camera.frames_captured > captured
