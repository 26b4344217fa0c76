"""Topic names and payload builders against the MQTT table of docs/mqtt.md."""
import json
import math

import numpy as np
import pytest

from edge_app.config.schema import MQTTConfig
from edge_app.detect.detections import Detections
from edge_app.mqtt import (
    MqttPublisher,
    Topics,
    camera_state_payload,
    detections_payload,
    encode,
    stats_payload,
    status_payload,
)


def test_topics_follow_prefix_and_device_id():
    t = Topics("edge_app", "edge-01")
    assert t.root == "edge_app/edge-01"
    assert t.status == "edge_app/edge-01/status"
    assert t.stats == "edge_app/edge-01/stats"
    assert t.camera_detections("cam1") == "edge_app/edge-01/cameras/cam1/detections"
    assert t.camera_state("cam1") == "edge_app/edge-01/cameras/cam1/state"
    assert t.all_detections == "edge_app/edge-01/cameras/+/detections"
    assert t.camera_of("edge_app/edge-01/cameras/cam_2/state") == "cam_2"
    assert t.camera_of("edge_app/edge-01/status") is None
    assert t.is_camera_state("edge_app/edge-01/cameras/cam1/state")
    assert not t.is_camera_state("edge_app/edge-01/cameras/cam1/detections")


def test_nested_prefix():
    assert Topics("site/a", "d").camera_state("c") == "site/a/d/cameras/c/state"


@pytest.mark.parametrize("bad", ["a/b", "+", "#", "", "x" * 65])
def test_camera_ids_that_would_break_topics_are_refused(bad):
    with pytest.raises(ValueError):
        Topics("p", "d").camera_detections(bad)


def test_status_payload_fields():
    p = status_payload("online", "edge-01", "1.2.3", ts=12.5)
    assert p == {"state": "online", "device_id": "edge-01", "version": "1.2.3", "ts": 12.5}
    assert status_payload("offline", "d", "v")["state"] == "offline"
    assert isinstance(status_payload("online", "d", "v")["ts"], float)
    with pytest.raises(ValueError):
        status_payload("sleeping", "d", "v")


@pytest.mark.parametrize("state", ["connecting", "streaming", "reconnecting", "stopped", "error"])
def test_camera_state_payload_fields(state):
    p = camera_state_payload(state, None, ts=3.0)
    assert p == {"state": state, "ts": 3.0, "error": None}


def test_camera_state_payload_error_text_and_unknown_state():
    assert camera_state_payload("error", "RTSP 401 Unauthorized", ts=1.0)["error"] == "RTSP 401 Unauthorized"
    with pytest.raises(ValueError):
        camera_state_payload("dead")


def test_detections_payload_fields_from_dicts():
    p = detections_payload(
        "edge-01", "cam1", 7, 1700000000.25, 1920, 1080, 12.3456,
        [{"class_id": 0, "label": "person", "confidence": 0.87, "bbox": [1, 2, 3, 4]}],
    )
    assert set(p) == {"device_id", "camera_id", "frame_id", "ts", "width", "height", "latency_ms", "model", "detections"}
    assert p["model"] == "default", "the single model is named default"
    assert p["frame_id"] == 7 and p["ts"] == 1700000000.25 and p["width"] == 1920 and p["height"] == 1080
    assert p["latency_ms"] == pytest.approx(12.35)
    assert p["detections"] == [{"class_id": 0, "label": "person", "confidence": 0.87, "bbox": [1.0, 2.0, 3.0, 4.0]}]
    json.dumps(p)


def test_detections_payload_from_detections_type():
    dets = Detections(
        np.array([[10, 20, 30, 40], [1, 1, 5, 5]], np.float32), np.array([0.9, 0.5], np.float32), np.array([0, 2], np.int32),
        labels=["person", "bicycle", "car"],
    )
    p = detections_payload("d", "c", 1, 1.0, 64, 48, 1.0, dets)
    assert [d["label"] for d in p["detections"]] == ["person", "car"]
    assert set(p["detections"][0]) == {"class_id", "label", "confidence", "bbox"}
    assert p["detections"][0]["bbox"] == [10.0, 20.0, 30.0, 40.0]
    json.dumps(p)


def test_detection_bbox_must_have_four_values():
    with pytest.raises(ValueError):
        detections_payload("d", "c", 1, 1.0, 1, 1, 1.0, [{"class_id": 0, "label": "x", "confidence": 1, "bbox": [1, 2, 3]}])


def test_stats_payload_has_contract_figures_and_extras():
    p = stats_payload("d", fps=29.5, latency_ms={"p50": 12.0, "p99": 30.0}, queue=2, dropped=5, ts=4.0, cameras={"cam1": {"fps": 29.5}})
    assert p == {
        "device_id": "d", "ts": 4.0, "fps": 29.5, "latency_ms": {"p50": 12.0, "p99": 30.0},
        "queue": 2, "dropped": 5, "cameras": {"cam1": {"fps": 29.5}},
    }


def test_encode_is_compact_utf8_json_without_nan():
    raw = encode({"a": float("nan"), "b": [np.float32(1.5), np.int64(3)], "c": np.array([1, 2]), "é": "ü"})
    assert isinstance(raw, bytes)
    assert json.loads(raw.decode("utf-8")) == {"a": None, "b": [1.5, 3], "c": [1, 2], "é": "ü"}
    assert b" " not in raw
    assert not math.isnan(json.loads(raw)["b"][0])


@pytest.mark.parametrize("payload, expected", [
    ({"a": 1, "b": [1.5, "x", None, True]}, {"a": 1, "b": [1.5, "x", None, True]}),
    ({"nested": {"p99": float("inf")}}, {"nested": {"p99": None}}),
    ({"deep": [{"v": [float("-inf"), 2.0]}]}, {"deep": [{"v": [None, 2.0]}]}),
    ({"xyxy": (1.0, 2.0)}, {"xyxy": [1.0, 2.0]}),
    ({"n": np.float32(0.25)}, {"n": 0.25}),
    ({"cams": {"c1": {"fps": np.float64("nan")}}}, {"cams": {"c1": {"fps": None}}}),
    ({7: "int key"}, {"7": "int key"}),
])
def test_encode_gives_the_same_json_whichever_path_it_takes(payload, expected):
    """Plain payloads are dumped directly, others converted first: both give strict JSON."""
    raw = encode(payload)
    assert json.loads(raw) == expected
    assert b"NaN" not in raw and b"Infinity" not in raw


def test_disabled_publisher_is_a_no_op_with_stats():
    pub = MqttPublisher(MQTTConfig(enabled=False), "d", "v")
    pub.start()
    assert pub.publish_detections("cam1", {"detections": [1]}) is False
    assert pub.publish_camera_state("cam1", "streaming") is False
    assert pub.publish_stats({"fps": 1}) is False
    assert pub.stats() == {"connected": False, "published": 0, "queued": 0, "dropped": 0,
                           "stalled": False, "stall_reason": None, "loop_restarts": 0, "callback_errors": {},
                           "lag_ms": 0.0, "behind_reason": None, "closed_by_broker": 0, "takeover_warning": None}
    pub.stop()


def test_client_id_defaults_to_device_id():
    assert MqttPublisher(MQTTConfig(), "edge-07", "v").client_id == "edge-app-edge-07"
    assert MqttPublisher(MQTTConfig(client_id="mine"), "edge-07", "v").client_id == "mine"


def test_empty_frames_are_skipped_unless_publish_empty():
    empty = detections_payload("d", "cam1", 1, 1.0, 1, 1, 1.0, [])
    quiet = MqttPublisher(MQTTConfig(port=1), "d", "v")
    assert quiet.publish_detections("cam1", empty) is False
    assert quiet.stats()["queued"] == 0
    chatty = MqttPublisher(MQTTConfig(port=1, publish_empty=True), "d", "v")
    assert chatty.publish_detections("cam1", empty) is True
    assert chatty.stats()["queued"] == 1


def test_offline_queue_is_bounded_before_any_connection():
    pub = MqttPublisher(MQTTConfig(port=1, max_queue=3), "d", "v")
    for i in range(5):
        pub.publish_detections("cam1", {"frame_id": i, "detections": [1]})
    assert pub.stats() == {"connected": False, "published": 0, "queued": 3, "dropped": 2,
                           "stalled": False, "stall_reason": None, "loop_restarts": 0, "callback_errors": {},
                           "lag_ms": 0.0, "behind_reason": None, "closed_by_broker": 0, "takeover_warning": None}
