"""A masked camera in a running appliance records masked files, and check-config says so.

The appliance, its recorder (``recording_service``), the camera reading a real clip (the walking
people, H.264) and the model are the real ones; the segment it writes is decoded with PyAV."""
from __future__ import annotations

import subprocess
import sys

import av
import numpy as np
import pytest
import yaml

from prometheus_client import CollectorRegistry, generate_latest

from edge_app.api.metrics import ApplianceCollector
from edge_app.appliance.appliance import Appliance
from edge_app.mqtt.payloads import stats_payload_for
from edge_app.config.file import parse_config
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

LEFT_HALF = [[0, 0], [0.5, 0], [0.5, 1], [0, 1]]


def registry_of(reads) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ApplianceCollector(reads))
    return registry


def config_dict(tmp_path, clip, model_path, privacy):
    return {
        "device_id": "box1",
        "cameras": [{"id": "cam1", "source": str(clip), "fps_limit": 5, "privacy": privacy},
                    {"id": "cam2", "source": str(clip), "fps_limit": 1, "detect": False}],
        "model": {"path": str(model_path), "backend": "onnxruntime"},
        "mqtt": {"enabled": False},
        "events": {"dir": str(tmp_path / "events")},
        "record": {"dir": str(tmp_path / "recordings"), "continuous": {"enabled": True, "segment_s": 600}},
    }


def test_the_segment_of_a_masked_camera_is_masked_in_every_frame(tmp_path, walking_clip, model_path):
    config = parse_config(config_dict(tmp_path, walking_clip.path, model_path, {"masks": [{"polygon": LEFT_HALF}]}))
    appliance = Appliance(config, record=True)
    appliance.start()
    try:
        # the file plays once in real time; stopping the appliance finishes the segments
        wait_for(lambda: all(c.frames_captured >= 20 for c in appliance.reads.cameras()), 60, "both cameras read their file")
        wait_for(lambda: len(list((tmp_path / "recordings").rglob("*.mp4"))) == 2, 30, "a segment of each camera")
        status = appliance.reads.status()
        metrics = generate_latest(registry_of(appliance.reads)).decode()
    finally:
        appliance.stop()
    # the status, R/stats and /metrics say which encoder re-encodes the masked camera and what it dropped
    recording = {c.id: c.recording for c in status.cameras}
    assert (recording["cam1"].masked_encoder, recording["cam1"].masked_packets_dropped) == ("x264", 0)
    assert recording["cam2"].masked_encoder is None
    assert status.recording.masked_packets_dropped == 0
    stats = stats_payload_for(status)["cameras"]
    assert stats["cam1"]["recording_encoder"] == "x264" and stats["cam1"]["recording_masked_packets_dropped"] == 0
    assert "recording_encoder" not in stats["cam2"]
    assert 'edge_app_camera_recording_masked_packets_dropped_total{camera="cam1",encoder="x264"} 0.0' in metrics
    assert 'camera="cam2",encoder' not in metrics
    assert "edge_app_recording_masked_packets_dropped_total 0.0" in metrics
    files = {path.relative_to(tmp_path / "recordings").parts[0]: path
             for path in (tmp_path / "recordings").rglob("*.mp4")}
    assert set(files) == {"cam1", "cam2"}, files
    width = walking_clip.width
    with av.open(str(files["cam1"])) as masked, av.open(str(files["cam2"])) as plain:
        assert masked.streams.video[0].codec_context.name == "h264"
        masked_frames = [f.to_ndarray(format="bgr24") for f in masked.decode(video=0)]
        plain_frames = [f.to_ndarray(format="bgr24") for f in plain.decode(video=0)]
    assert len(masked_frames) >= 20
    left = np.s_[:, 4:width // 2 - 8]  # the mask, less the encoder's blocks along its edge
    for index, frame in enumerate(masked_frames):
        assert frame[left].max() <= 40 and frame[left].mean() < 2, f"frame {index} shows the masked half"
    # the camera without masks is recorded by stream copy: its left half is the picture
    assert max(frame[left].mean() for frame in plain_frames) > 50


@pytest.mark.parametrize("privacy, record, says", [
    ({}, {"continuous": {"enabled": True}}, "camera cam1: recording: stream copy"),
    ({"masks": [{"polygon": LEFT_HALF}]}, {"continuous": {"enabled": True}},
     "camera cam1: recording: re-encoded with x264 on the CPU (privacy masks); no NVENC: "),
    ({"masks": [{"polygon": LEFT_HALF}], "record_height": 480}, {"continuous": {"enabled": True}},
     "camera cam1: recording: re-encoded with x264 on the CPU (privacy masks) at 480 px high; no NVENC: "),
    ({"masks": [{"polygon": LEFT_HALF}]}, {}, "camera cam1: recording: off"),
], ids=["no masks", "masks", "masks at a height", "not recorded"])
def test_check_config_says_how_each_camera_is_recorded(tmp_path, walking_clip, model_path, privacy, record, says):
    raw = config_dict(tmp_path, walking_clip.path, model_path, privacy)
    raw["record"] = {"dir": str(tmp_path / "recordings"), **record}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    done = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # a masked camera's line goes on with why this machine has no hardware encoder (no GPU here)
    assert any(line == says or (says.endswith(": ") and line.startswith(says))
               for line in done.stdout.splitlines()), done.stdout
