"""The analysis path gives the detections, tracks and events it gave when the scene was recorded.

tests/events/data/recorded_scene.json was written by ``python -m tests.support.recorded_scene``
(its header says with which commit, model and clip): the real YOLOv8n on the CPU over the
camera-like scene on two cameras, through the real Pipeline, ResultStore and AnalysisHub. Running
it again must give, per camera and in order, the same detections with the same track ids, and the
same events, snapshots, counts and crossings.
"""
import inspect
import json
from pathlib import Path

import pytest

from edge_app.mqtt.publisher import MqttPublisher
from tests.support.recorded_scene import RecordingPublisher, run_scene

RECORDED = Path(__file__).parent / "data" / "recorded_scene.json"
#: events, crossings and zone figures go out in the order they happened
ORDERED = ("event", "crossing", "zone_stats")
#: counts and snapshots of one frame go out in the order of a set of labels, which differs from
#: one interpreter to the next (string hashing): compared as a multiset
UNORDERED = ("objects", "zone", "line", "snapshot")


@pytest.mark.parametrize("method", [name for name in vars(RecordingPublisher) if name.startswith("publish_")])
def test_the_recording_publisher_takes_what_mqtt_publisher_takes(method):
    ours, real = inspect.signature(getattr(RecordingPublisher, method)), inspect.signature(getattr(MqttPublisher, method))
    assert list(ours.parameters) == list(real.parameters)


@pytest.mark.slow
@pytest.mark.parametrize("lanes", [1, 2], ids=["one-lane", "a-lane-per-camera"])
def test_the_recorded_scene_gives_the_same_detections_tracks_and_events(model_path, images_dir, lanes):
    recorded = json.loads(RECORDED.read_text())
    assert recorded["header"]["model"].startswith(model_path.name)
    result = run_scene(model_path, images_dir, lanes)
    assert result["frames_per_camera"] == recorded["frames_per_camera"]
    for camera_id, expected in recorded["cameras"].items():
        got = json.loads(json.dumps(result["cameras"][camera_id]))  # tuples as lists, as in the file
        assert got["detections"] == expected["detections"], camera_id
        for kind in ORDERED:
            assert of_kind(got["messages"], kind) == of_kind(expected["messages"], kind), (camera_id, kind)
        for kind in UNORDERED:
            assert sorted(map(repr, of_kind(got["messages"], kind))) == sorted(map(repr, of_kind(expected["messages"], kind))), \
                (camera_id, kind)


def of_kind(messages, kind):
    return [m for m in messages if m[0] == kind]
