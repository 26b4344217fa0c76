"""Against a real Mosquitto: no inbound message, failing handler or dead network thread silences the publisher."""
from __future__ import annotations

import logging
import threading

import paho.mqtt.publish as mqtt_publish
import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import parse_config
from tests.mqtt.helpers import detection, wait_until

ROOT = "edge_app/dev1"
DISCOVERY = "homeassistant/device/dev1/config"
NESTED = b"[" * 100000 + b"]" * 100000  # 200 KB of nested brackets


def _send(broker, topic: str, payload: bytes, retain: bool = False) -> None:
    mqtt_publish.single(topic, payload, qos=1, retain=retain, hostname=broker.host, port=broker.port)


def _ha_config():
    return parse_config({"device_id": "dev1", "cameras": [{"id": "cam1", "source": "test://box"}],
                         "model": {"path": "m.onnx"}, "homeassistant": {"enabled": True}})


def _detections_still_arrive(pub, sub, first_frame: int, count: int = 5) -> None:
    for frame_id in range(first_frame, first_frame + count):
        pub.publish_detections("cam1", detection("cam1", frame_id))
    sub.wait_for(lambda msgs: {m.json()["frame_id"] for m in msgs if m.topic.endswith("/detections")}
                 >= set(range(first_frame, first_frame + count)), 10)
    # Acknowledged too: a dead network thread still writes (paho then sends from the caller's
    # thread) but never reads a PUBACK again.
    wait_until(lambda: pub.stats()["queued"] == 0, 10, "detections acknowledged")


def test_a_retained_nested_message_on_the_discovery_topic_does_not_silence_the_publisher(
        mosquitto_broker, publisher_factory, mqtt_collector):
    _send(mosquitto_broker, DISCOVERY, NESTED, retain=True)
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/detections", qos=1)
    pub = publisher_factory(mosquitto_broker)
    pub.set_ha_discovery(_ha_config(), ["person"])  # subscribes to its discovery topic on connect
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    _detections_still_arrive(pub, sub, 1)
    # Sent again while connected: the retained copy arrives once more on the new subscription.
    _send(mosquitto_broker, DISCOVERY, NESTED)
    _detections_still_arrive(pub, sub, 100)
    stats = pub.stats()
    assert stats["connected"] and not stats["stalled"] and stats["loop_restarts"] == 0


def test_a_handler_that_raises_is_counted_logged_once_and_the_client_goes_on(
        mosquitto_broker, publisher_factory, mqtt_collector, caplog):
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/detections", qos=1)
    pub = publisher_factory(mosquitto_broker)

    def camera_known(camera_id: str) -> bool:
        raise RuntimeError("a broken lookup")

    pub.on_detect_set(lambda camera_id, enabled: None, camera_known=camera_known)
    pub.start()
    wait_until(lambda: pub.connected and pub.commands_subscribed, 5, "subscribed")
    with caplog.at_level(logging.ERROR, logger="edge_app.mqtt"):
        for _ in range(5):
            _send(mosquitto_broker, f"{ROOT}/cameras/cam1/detect/set", b"ON")
        wait_until(lambda: pub.stats()["callback_errors"].get("on_message") == 5, 10, "five errors counted")
    _detections_still_arrive(pub, sub, 1)
    logged = [r for r in caplog.records if "on_message" in r.getMessage()]
    assert len(logged) == 1 and "a broken lookup" in logged[0].getMessage()
    assert pub.stats()["loop_restarts"] == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the death is the test
def test_a_killed_network_loop_is_restarted_and_publishing_resumes(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/detections", qos=1)
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    _detections_still_arrive(pub, sub, 1)

    client = pub._client
    original = client.loop_misc
    killed = threading.Event()

    def loop_misc_that_dies_once():
        if not killed.is_set():
            killed.set()
            raise RuntimeError("injected death of the network thread")
        return original()

    client.loop_misc = loop_misc_that_dies_once  # paho's loop calls it on every turn
    wait_until(killed.is_set, 5, "network thread killed")
    wait_until(lambda: pub.stats()["loop_restarts"] == 1, 10, "network loop restarted")
    wait_until(lambda: pub.connected, 10, "connected again")
    _detections_still_arrive(pub, sub, 100)
    assert not pub.stats()["stalled"]


def test_a_network_thread_stuck_in_a_handler_shows_as_stalled_in_status_and_readiness(
        mosquitto_broker, publisher_factory, tmp_path):
    made = []

    def factory(config, device_id, version):
        made.append(publisher_factory(mosquitto_broker, keepalive=5))
        return made[-1]

    config = parse_config({"device_id": "dev1", "cameras": [{"id": "cam1", "source": "test://box"}],
                           "model": {"path": str(tmp_path / "m.onnx")},
                           "mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port}})
    appliance = Appliance(config, publisher_factory=factory)  # not started: only its readiness is asked
    pub = made[0]
    release = threading.Event()
    pub.on_detect_set(lambda camera_id, enabled: release.wait(60))
    pub.start()
    wait_until(lambda: pub.connected and pub.commands_subscribed, 5, "subscribed")
    assert pub.link_health().stall_after_s == 10
    assert not any("MQTT" in reason for reason in appliance.reads.readiness()[1])
    _send(mosquitto_broker, f"{ROOT}/cameras/cam1/detect/set", b"ON")  # the network thread now waits
    for frame_id in range(1, 4):
        pub.publish_detections("cam1", detection("cam1", frame_id))
    try:
        wait_until(lambda: pub.link_health().stalled, 20, "stall noticed")
        stats = pub.stats()
        assert stats["stalled"] and "no MQTT traffic" in stats["stall_reason"]
        assert appliance.reads.mqtt_health().stalled
        assert any(reason.startswith("the MQTT link is stalled: no MQTT traffic") for reason in appliance.reads.readiness()[1])
    finally:
        release.set()
    wait_until(lambda: pub.connected and pub.stats()["queued"] == 0, 20, "the link moves again")
    assert not pub.link_health().stalled
    assert not any("MQTT" in reason for reason in appliance.reads.readiness()[1])
