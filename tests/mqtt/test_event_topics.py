"""Topics and payloads of docs/mqtt.md: events, counts, lines, snapshots, the detect switch."""
import logging

import pytest

from edge_app.config.schema import MQTTConfig
from edge_app.events.model import NEW, Event, EventMessage
from edge_app.mqtt import MqttPublisher, Topics, encode
from edge_app.mqtt.detect_set_commands import DetectSetCommands
from edge_app.mqtt.payloads import (
    count_payload,
    detect_state_payload,
    line_count_payload,
    line_crossing_payload,
    parse_detect_command,
)

T = Topics("edge_app", "edge-01")
R = "edge_app/edge-01"


def test_extension_topics_follow_the_spec_table():
    assert T.events == f"{R}/events"
    assert T.camera_objects("cam1", "person") == f"{R}/cameras/cam1/objects/person"
    assert T.camera_objects("cam1", "traffic light") == f"{R}/cameras/cam1/objects/traffic light"
    assert T.zone_objects("driveway", "car") == f"{R}/zones/driveway/car"
    assert T.camera_line("cam1", "gate") == f"{R}/cameras/cam1/lines/gate"
    assert T.camera_line_crossing("cam1", "gate") == f"{R}/cameras/cam1/lines/gate/crossing"
    assert T.camera_detect_state("cam1") == f"{R}/cameras/cam1/detect/state"
    assert T.camera_detect_set("cam1") == f"{R}/cameras/cam1/detect/set"
    assert T.all_detect_set == f"{R}/cameras/+/detect/set"
    assert T.camera_label_snapshot("cam1", "person") == f"{R}/cameras/cam1/person/snapshot"


@pytest.mark.parametrize("label", ["a/b", "#", "x+", "", "tab\there", "x" * 129])
def test_labels_that_would_change_the_topic_tree_are_refused(label):
    for build in (lambda: T.camera_objects("cam1", label), lambda: T.zone_objects("z", label),
                  lambda: T.camera_label_snapshot("cam1", label)):
        with pytest.raises(ValueError):
            build()


def test_new_camera_topics_do_not_look_like_camera_states_or_detections():
    assert T.camera_of(T.camera_detect_state("cam1")) is None
    assert not T.is_camera_state(T.camera_detect_state("cam1"))
    assert T.is_detect_state(T.camera_detect_state("cam1"))
    assert not T.is_detect_state(T.camera_state("cam1"))


@pytest.mark.parametrize("topic, camera", [
    (f"{R}/cameras/cam1/detect/set", "cam1"),
    (f"{R}/cameras/cam-2_x/detect/set", "cam-2_x"),
    (f"{R}/cameras/a/b/detect/set", None),
    (f"{R}/cameras//detect/set", None),
    (f"{R}/cameras/cam1/detect/state", None),
    ("edge_app/other/cameras/cam1/detect/set", None),
    (f"{R}/cameras/cam 1/detect/set", None),
])
def test_detect_set_camera(topic, camera):
    assert T.detect_set_camera(topic) == camera


def test_count_and_line_payloads():
    assert count_payload(3, ts=10.5) == {"count": 3, "ts": 10.5, "model": "default"}
    assert line_count_payload(4, 2, ts=1.0) == {"in": 4, "out": 2, "ts": 1.0, "model": "default"}
    assert line_crossing_payload("e1", 7, "person", "in", ts=2.0) == {
        "event_id": "e1", "track_id": 7, "label": "person", "direction": "in", "ts": 2.0, "model": "default"}
    # the camera's model (cameras[].model) names whose labels were counted
    assert count_payload(1, ts=1.0, model="plates")["model"] == "plates"
    assert line_count_payload(1, 0, ts=1.0, model="plates")["model"] == "plates"
    assert line_crossing_payload(None, 7, "plate", "in", ts=2.0, model="plates")["model"] == "plates"
    assert line_crossing_payload(None, 7, "person", "out", ts=2.0)["event_id"] is None
    with pytest.raises(ValueError):
        line_crossing_payload("e1", 7, "person", "sideways")
    with pytest.raises(ValueError):
        count_payload(-1)


def test_event_message_payload_is_the_spec_shape():
    event = Event("1.0-cam1-3", "cam1", "person", 3, 0.8, 0.9, (1.0, 2.0, 3.0, 4.0), 5.0, 1.0)
    body = EventMessage(NEW, event).to_dict()
    assert set(body) == {"type", "before", "after"} and body["before"] is None
    assert set(body["after"]) == {"id", "camera_id", "label", "track_id", "score", "top_score", "box", "frame_time",
                                  "start_time", "end_time", "current_zones", "entered_zones", "has_snapshot",
                                  "model", "has_clip", "clip_duration_s", "type", "dwell_s", "speed_kmh", "speed_alert",
                                  "occupancy"}
    assert encode(body)  # JSON-serialisable as it is


@pytest.mark.parametrize("payload, expected", [
    (b"ON", True), (b"OFF", False), (b"on", True), (b" off\n", False),
    (b"", None), (b"1", None), (b"true", None), (b'{"state": "ON"}', None), (b"\xff\xfe", None),
    (b"ON" + b" " * 100, None), (b"ONN", None),
])
def test_parse_detect_command(payload, expected):
    assert parse_detect_command(payload) is expected


def test_detect_state_payload():
    assert detect_state_payload(True) == b"ON" and detect_state_payload(False) == b"OFF"


def test_detect_commands_accept_only_known_cameras_and_on_off(caplog):
    calls = []
    commands = DetectSetCommands(T, lambda cam, on: calls.append((cam, on)), camera_known=lambda cam: cam == "cam1")
    assert commands.handle(f"{R}/cameras/cam1/detect/set", b"OFF")
    assert commands.handle(f"{R}/cameras/cam1/detect/set", b"ON")
    with caplog.at_level(logging.WARNING, logger="edge_app.mqtt.detect_set_commands"):
        for _ in range(50):
            assert not commands.handle(f"{R}/cameras/cam9/detect/set", b"ON")
            assert not commands.handle(f"{R}/cameras/cam1/detect/set", b"maybe")
    assert calls == [("cam1", False), ("cam1", True)]
    assert commands.ignored == 100
    assert len([r for r in caplog.records if "ignored MQTT command" in r.getMessage()]) == 1  # rate-limited


def test_a_failing_handler_is_logged_not_raised(caplog):
    def broken(cam, on):
        raise RuntimeError("boom")
    commands = DetectSetCommands(T, broken)
    with caplog.at_level(logging.ERROR, logger="edge_app.mqtt.detect_set_commands"):
        assert not commands.handle(f"{R}/cameras/cam1/detect/set", b"ON")
    assert "boom" in caplog.text


def test_disabled_publisher_publishes_nothing_and_checks_nothing():
    pub = MqttPublisher(MQTTConfig(enabled=False), "edge-01", "1.0")
    assert pub.publish_object_count("cam1", "bad/label", 1) is False
    assert pub.publish_zone_count("z", "person", 1) is False
    assert pub.publish_line_count("cam1", "gate", 1, 2) is False
    assert pub.publish_line_crossing("cam1", "gate", None, 1, "person", "in") is False
    assert pub.publish_snapshot("cam1", "person", b"\xff\xd8") is False
    assert pub.publish_detect_state("cam1", True) is False
    assert pub.stats()["queued"] == 0


def test_detections_carry_track_ids_once_tracked():
    import numpy as np

    from edge_app.detect.detections import Detections
    from edge_app.mqtt import detections_payload
    dets = Detections(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32), np.array([0.9, 0.8], np.float32),
                      np.array([0, 0], np.int32), ("person",))
    untracked = detections_payload("d", "cam1", 1, 1.0, 640, 480, 1.0, dets)["detections"]
    tracked = detections_payload("d", "cam1", 1, 1.0, 640, 480, 1.0, dets.with_track_ids(np.array([7, -1])))["detections"]
    assert all("track_id" not in d for d in untracked)
    assert [d["track_id"] for d in tracked] == [7, -1]
