"""Broker outages: the offline queue, its bound, and messages in flight when the link drops."""
from __future__ import annotations

import threading
import time

from tests.mqtt.helpers import detection, first_occurrences, frame_ids_by_camera, wait_until

ROOT = "edge_app/dev1"
DETECTIONS = f"{ROOT}/cameras/+/detections"


def _persistent_subscriber(mqtt_collector, broker, name="outage-sub"):
    sub = mqtt_collector(broker, DETECTIONS, qos=1, client_id=name, clean_session=False)
    # A killed broker restarts from its last autosave: have the subscription on disk first.
    broker.wait_persisted()
    return sub


def test_outage_queue_is_flushed_in_order(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = _persistent_subscriber(mqtt_collector, mosquitto_broker)
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")

    mosquitto_broker.stop()
    wait_until(lambda: not pub.connected, 5, "disconnect noticed")
    for i in range(1, 26):
        pub.publish_detections("cam1", detection("cam1", i))
        pub.publish_detections("cam2", detection("cam2", i))
    assert pub.stats()["queued"] == 50
    time.sleep(2)
    mosquitto_broker.start()

    sub.wait_for_count(50, DETECTIONS, timeout_s=10)
    by_cam = frame_ids_by_camera(sub.payloads(DETECTIONS))
    assert by_cam == {"cam1": list(range(1, 26)), "cam2": list(range(1, 26))}
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "queue empty")
    assert pub.stats()["dropped"] == 0 and pub.stats()["connected"]


def test_offline_queue_drops_the_oldest_beyond_max_queue(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = _persistent_subscriber(mqtt_collector, mosquitto_broker)
    pub = publisher_factory(mosquitto_broker, max_queue=10)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")

    mosquitto_broker.stop()
    wait_until(lambda: not pub.connected, 5, "disconnect noticed")
    for i in range(1, 31):
        pub.publish_detections("cam1", detection("cam1", i))
    assert pub.stats()["dropped"] == 20 and pub.stats()["queued"] == 10
    mosquitto_broker.start()

    sub.wait_for_count(10, DETECTIONS, timeout_s=10)
    time.sleep(0.5)  # nothing more may come
    assert [p["frame_id"] for p in sub.payloads(DETECTIONS)] == list(range(21, 31))
    assert pub.stats()["dropped"] == 20


def test_unacknowledged_messages_survive_a_broker_crash(mosquitto_broker, publisher_factory, mqtt_collector):
    """Messages paho has sent but the broker never acknowledged are sent again after reconnect."""
    sub = _persistent_subscriber(mqtt_collector, mosquitto_broker)
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.publish_detections("cam1", detection("cam1", 1))
    sub.wait_for_count(1, DETECTIONS)

    mosquitto_broker.pause()  # hung broker: the socket stays open, nothing is acknowledged
    for i in range(2, 12):
        pub.publish_detections("cam1", detection("cam1", i))
    wait_until(lambda: pub.stats()["queued"] == 10, 5, "ten messages in flight")
    assert pub.stats()["connected"]
    mosquitto_broker.kill()  # the broker dies with the ten unread in its socket
    wait_until(lambda: not pub.connected, 5, "disconnect noticed")
    for i in range(12, 16):
        pub.publish_detections("cam1", detection("cam1", i))
    mosquitto_broker.start()

    sub.wait_for_count(15, DETECTIONS, timeout_s=10)
    ids = [p["frame_id"] for p in sub.payloads(DETECTIONS)]
    assert first_occurrences(ids) == list(range(1, 16))
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "all acknowledged")
    assert pub.stats()["dropped"] == 0


def test_latest_camera_state_wins_after_an_outage(mosquitto_factory, publisher_factory, mqtt_collector):
    broker = mosquitto_factory(persistence=False)  # retained messages die with the broker
    pub = publisher_factory(broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.publish_camera_state("cam1", "streaming")
    pub.publish_camera_state("cam2", "streaming")
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "states acknowledged")

    broker.pause()
    pub.publish_camera_state("cam1", "error", "stream stalled")  # in flight, never acknowledged
    wait_until(lambda: pub.stats()["queued"] == 1, 5, "state in flight")
    broker.kill()
    wait_until(lambda: not pub.connected, 5, "disconnect noticed")
    pub.publish_camera_state("cam1", "reconnecting")  # while away: remembered, not queued
    broker.start()
    wait_until(lambda: pub.connected and pub.stats()["queued"] == 0, 6, "reconnected and flushed")

    late = mqtt_collector(broker, f"{ROOT}/#")
    state1 = late.wait_for_message(f"{ROOT}/cameras/cam1/state")
    state2 = late.wait_for_message(f"{ROOT}/cameras/cam2/state")
    status = late.wait_for_message(f"{ROOT}/status")
    assert state1.retain and state1.json()["state"] == "reconnecting"
    assert state2.retain and state2.json()["state"] == "streaming"
    assert status.retain and status.json()["state"] == "online"


def test_no_loss_when_the_broker_restarts_mid_stream(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = _persistent_subscriber(mqtt_collector, mosquitto_broker)
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    total = 400

    def produce():
        for i in range(1, total + 1):
            pub.publish_detections("cam1", detection("cam1", i))
            time.sleep(0.005)

    producer = threading.Thread(target=produce)
    producer.start()
    sub.wait_for_count(100, DETECTIONS, timeout_s=10)
    mosquitto_broker.stop()  # mid-stream, with messages in flight in both directions
    time.sleep(1)
    mosquitto_broker.start()
    producer.join()

    sub.wait_for(lambda msgs: len({m.json()["frame_id"] for m in msgs}) >= total, timeout_s=15)
    ids = [p["frame_id"] for p in sub.payloads(DETECTIONS)]
    assert first_occurrences(ids) == list(range(1, total + 1))
    assert pub.stats()["dropped"] == 0


def test_status_says_when_publishing_falls_behind_and_why(mosquitto_broker, publisher_factory):
    """A link that takes messages more slowly than they come shows as lag with a reason, not only as a queue."""
    pub = publisher_factory(mosquitto_broker, max_inflight=2)
    pub.start()
    wait_until(lambda: pub.connected and pub.stats()["queued"] == 0, 5, "connected")
    assert pub.stats()["lag_ms"] == 0.0 and pub.stats()["behind_reason"] is None
    mosquitto_broker.pause()  # connected, nothing acknowledged: the window fills, the rest waits
    for i in range(1, 6):
        pub.publish_detections("cam1", detection("cam1", i))
    wait_until(lambda: pub.stats()["lag_ms"] >= 1000.0, 5, "the oldest queued message waited a second")
    reason = pub.stats()["behind_reason"]
    assert reason is not None and "behind" in reason and "QoS 1" in reason and "2 unacknowledged" in reason
    mosquitto_broker.resume()
    wait_until(lambda: pub.stats()["queued"] == 0, 10, "caught up")
    assert pub.stats()["lag_ms"] == 0.0 and pub.stats()["behind_reason"] is None
