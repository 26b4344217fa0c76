"""MQTT output of the appliance: topic names, payload builders and the publisher."""
from edge_app.mqtt.payloads import (
    CAMERA_STATES,
    DEVICE_STATES,
    camera_state_payload,
    detection_entry,
    detections_payload,
    encode,
    stats_payload,
    status_payload,
)
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.mqtt.topics import Topics

__all__ = [
    "CAMERA_STATES",
    "DEVICE_STATES",
    "MqttPublisher",
    "Topics",
    "camera_state_payload",
    "detection_entry",
    "detections_payload",
    "encode",
    "stats_payload",
    "status_payload",
]
