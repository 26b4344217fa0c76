"""``python -m bench.cpu cameras``: its clip, its run through the real appliance, its profile summary.

No timing is asserted: the figures depend on the machine and on what else runs on it.
"""
import json
import os
import subprocess
import sys

import cv2
import pytest

from bench.cpu import camera_scene, motion_clips
from bench.cpu.cameras import summarise_stacks
from bench.cpu.camera_scene import SceneSettings, ensure_camera_scene


def test_the_scene_walks_pans_and_has_noise(monkeypatch, tmp_path, images_dir):
    monkeypatch.setattr(motion_clips, "BUS_JPG", images_dir / "bus.jpg")
    clip = ensure_camera_scene(tmp_path, SceneSettings(size=(320, 180), fps=10, seconds=2.0, pan_period_s=2.0))
    capture = cv2.VideoCapture(str(clip))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame.astype(int))
    capture.release()
    assert len(frames) == 20 and frames[0].shape == (180, 320, 3)
    assert abs(frames[0] - frames[10]).mean() > 10  # people and view moved
    assert ensure_camera_scene(tmp_path, SceneSettings(size=(320, 180), fps=10, seconds=2.0, pan_period_s=2.0)) == clip
    assert camera_scene.SceneSettings().size == (1920, 1080) and camera_scene.SceneSettings().fps == 30


def test_py_spy_stacks_are_summed_by_own_and_inclusive_time():
    lines = ["thread (0x1);run (threading.py:10);analyse (appliance/analysis.py:5);update (track/zones.py:7) 30",
             "thread (0x1);run (threading.py:10);analyse (appliance/analysis.py:5) 10",
             "thread (0x2);run (threading.py:10);infer (detect/onnx.py:3) 60"]
    summary = summarise_stacks(lines)
    assert summary["samples"] == 100
    assert summary["own_percent"]["update (track/zones.py)"] == 30.0
    assert summary["inclusive_percent"]["analyse (appliance/analysis.py)"] == 40.0
    assert summary["inclusive_percent"]["run (threading.py)"] == 100.0


@pytest.mark.slow
def test_two_cameras_give_frames_cpu_and_every_stage(repo_root, model_path, images_dir, mosquitto_broker, tmp_path,
                                                     monkeypatch):
    monkeypatch.setattr(motion_clips, "BUS_JPG", images_dir / "bus.jpg")
    clip = ensure_camera_scene(tmp_path, SceneSettings(size=(640, 360), fps=10, seconds=2.0))
    out = tmp_path / "cameras.json"
    env = dict(os.environ, EDGE_APP_SHARED=str(images_dir.parent))
    done = subprocess.run(
        [sys.executable, "-m", "bench.cpu", "cameras", "--cameras", "2", "--seconds", "2", "--clip", str(clip),
         "--json", str(out), "--mqtt-host", mosquitto_broker.host, "--mqtt-port", str(mosquitto_broker.port)],
        cwd=repo_root, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["provenance"]["command"].startswith("python -m bench.cpu cameras")
    assert result["frames"] > 0 and result["cpu_ms_per_frame"] > 0
    assert result["tracking_events"] and result["counting"]
    assert {"preprocess", "inference", "postprocess", "tracking", "zones_lines", "events", "snapshots", "mqtt",
            "status"} <= set(result["stage_ms"])
