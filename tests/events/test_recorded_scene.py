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
#: ONNX Runtime's kernels differ by CPU (AVX2, AVX-512, ...) in the last bits of a float: a box
#: edge recorded as 172.839 comes out 172.84 on another CPU. Numbers are compared to this much;
#: everything else (ids, labels, classes, event kinds, order) exactly.
ABS_TOLERANCE = 0.01


@pytest.mark.parametrize("method", [name for name in vars(RecordingPublisher) if name.startswith("publish_")])
def test_the_recording_publisher_takes_what_mqtt_publisher_takes(method):
    ours, real = inspect.signature(getattr(RecordingPublisher, method)), inspect.signature(getattr(MqttPublisher, method))
    assert list(ours.parameters) == list(real.parameters)


@pytest.mark.slow
@pytest.mark.parametrize("lanes, tracker_processes", [(1, 0), (2, 0), (2, 1), (2, 2)],
                         ids=["one-lane", "a-lane-per-camera", "one-tracker-process", "a-tracker-process-per-camera"])
def test_the_recorded_scene_gives_the_same_detections_tracks_and_events(model_path, images_dir, lanes,
                                                                         tracker_processes):
    """With tracking.processes the trackers run in child processes: the same tracks and events."""
    recorded = json.loads(RECORDED.read_text())
    assert recorded["header"]["model"].startswith(model_path.name)
    result = run_scene(model_path, images_dir, lanes, tracker_processes)
    assert result["tracker_processes_started"] == tracker_processes
    assert result["frames_per_camera"] == recorded["frames_per_camera"]
    for camera_id, expected in recorded["cameras"].items():
        got = json.loads(json.dumps(result["cameras"][camera_id]))  # tuples as lists, as in the file
        assert_close(got["detections"], expected["detections"], camera_id)
        for kind in ORDERED:
            assert_close(of_kind(got["messages"], kind), of_kind(expected["messages"], kind), (camera_id, kind))
        for kind in UNORDERED:
            assert_close(sorted(of_kind(got["messages"], kind), key=shape), sorted(of_kind(expected["messages"], kind), key=shape),
                         (camera_id, kind))


def assert_close(got, expected, where):
    assert close(got, expected), (where, got, expected)


def close(got, expected) -> bool:
    """Equal; floats to ``ABS_TOLERANCE`` (ids, classes and booleans exactly)."""
    if isinstance(got, bool) or isinstance(expected, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(got, int) and isinstance(expected, int):
        return got == expected
    if isinstance(got, (int, float)) and isinstance(expected, (int, float)):
        return abs(got - expected) <= ABS_TOLERANCE
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(close(a, b) for a, b in zip(got, expected))
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(close(got[k], expected[k]) for k in got)
    return got == expected


def shape(message) -> str:
    """A message's order key for the unordered kinds, its numbers rounded coarser than the tolerance."""
    def coarse(value):
        if isinstance(value, float):
            return round(value)
        if isinstance(value, list):
            return [coarse(v) for v in value]
        if isinstance(value, dict):
            return {k: coarse(v) for k, v in value.items()}
        return value
    return repr(coarse(message))


def of_kind(messages, kind):
    return [m for m in messages if m[0] == kind]


@pytest.mark.parametrize("got, expected, same", [
    ([[167.789, 172.84, 0.565, 0, -1]], [[167.789, 172.839, 0.565, 0, -1]], True),
    ([[167.789, 172.9, 0.565, 0, -1]], [[167.789, 172.839, 0.565, 0, -1]], False),
    ([[1.0, 2.0, 0.5, 0, 4]], [[1.0, 2.0, 0.5, 0, 5]], False),  # track ids, classes: integers, exactly
    ({"id": "cam0-3", "box": [1.0, 2.004]}, {"id": "cam0-3", "box": [1.0, 2.0]}, True),
    ({"id": "cam0-3"}, {"id": "cam0-4"}, False),
    ([True], [1], False),
    ([1, 2], [1, 2, 3], False),
])
def test_numbers_are_close_and_everything_else_equal(got, expected, same):
    assert close(got, expected) is same
