"""The extension topics against a real Mosquitto: retained flags, QoS, the detect/set round trip."""
from __future__ import annotations

import threading

import paho.mqtt.publish as mqtt_publish

from edge_app.events.model import END, NEW, Event, EventMessage
from tests.mqtt.helpers import wait_until

ROOT = "edge_app/dev1"
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 40 + b"\xff\xd9"


def send(broker, topic: str, payload: bytes, retain: bool = False) -> None:
    mqtt_publish.single(topic, payload, qos=1, retain=retain, hostname=broker.host, port=broker.port)


def flushed(pub) -> bool:
    return pub.connected and pub.stats()["queued"] == 0


def test_counts_lines_snapshots_and_detect_state_are_retained(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.publish_object_count("cam1", "person", 2, ts=10.0)
    pub.publish_object_count("cam1", "person", 0, ts=11.0)  # the latest one is what stays
    pub.publish_zone_count("driveway", "car", 1, ts=12.0, model="vehicles")
    pub.publish_line_count("cam1", "gate", 5, 3, ts=13.0, model="vehicles")
    pub.publish_snapshot("cam1", "person", JPEG)
    pub.publish_detect_state("cam1", False)
    wait_until(lambda: flushed(pub), 5, "all acknowledged")

    late = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
    objects = late.wait_for_message(f"{ROOT}/cameras/cam1/objects/person")
    zone = late.wait_for_message(f"{ROOT}/zones/driveway/car")
    line = late.wait_for_message(f"{ROOT}/cameras/cam1/lines/gate")
    snapshot = late.wait_for_message(f"{ROOT}/cameras/cam1/person/snapshot")
    state = late.wait_for_message(f"{ROOT}/cameras/cam1/detect/state")
    assert all(m.retain and m.qos == 1 for m in (objects, zone, line, snapshot, state))
    assert objects.json() == {"count": 0, "ts": 11.0, "model": "default"}
    assert zone.json() == {"count": 1, "ts": 12.0, "model": "vehicles"}
    assert line.json() == {"in": 5, "out": 3, "ts": 13.0, "model": "vehicles"}
    assert snapshot.payload == JPEG
    assert state.payload == b"OFF"


def test_events_and_crossings_are_not_retained(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, [f"{ROOT}/events", f"{ROOT}/cameras/+/lines/+/crossing"])
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    event = Event("1.5-cam1-4", "cam1", "person", 4, 0.8, 0.9, (1.0, 2.0, 3.0, 4.0), 2.0, 1.5)
    pub.publish_event(EventMessage(NEW, event))
    pub.publish_line_crossing("cam1", "gate", event.id, 4, "person", "in", ts=2.0, model="people")
    ended = EventMessage(END, Event(**{**event.__dict__, "end_time": 3.0}), event)
    pub.publish_event(ended)
    msgs = sub.wait_for_count(2, f"{ROOT}/events")
    crossing = sub.wait_for_message(f"{ROOT}/cameras/cam1/lines/gate/crossing")
    assert all(not m.retain and m.qos == 1 for m in msgs + [crossing])
    assert [m.json()["type"] for m in msgs] == ["new", "end"]
    assert msgs[0].json()["before"] is None and msgs[0].json()["after"]["id"] == "1.5-cam1-4"
    assert msgs[1].json()["before"]["end_time"] is None and msgs[1].json()["after"]["end_time"] == 3.0
    assert crossing.json() == {"event_id": "1.5-cam1-4", "track_id": 4, "label": "person", "direction": "in", "ts": 2.0,
                               "model": "people"}
    wait_until(lambda: flushed(pub), 5, "acknowledged")
    late = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
    late.wait_for_message(f"{ROOT}/status")
    assert late.messages(f"{ROOT}/events") == [] and late.messages(f"{ROOT}/cameras/+/lines/+/crossing") == []


def test_no_report_or_detection_crowds_an_event_out_while_connected(mosquitto_broker, publisher_factory, mqtt_collector):
    # A flood of reports (as refusals of a desired flood were) and detections beyond max_queue
    # while events happen: only the flood's oldest messages may be dropped, never an event.
    sub = mqtt_collector(mosquitto_broker, [f"{ROOT}/events", f"{ROOT}/cameras/+/lines/+/crossing"])
    pub = publisher_factory(mosquitto_broker, max_queue=50)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    for i in range(40):
        for _ in range(100):
            pub.publish_config_reported({"version": None, "status": "rejected", "errors": [], "ts": 1.0})
            pub.publish_detections("cam1", {"ts": 1.0, "detections": [{"label": "person"}]})
        event = Event(f"1.5-cam1-{i}", "cam1", "person", i, 0.8, 0.9, (1.0, 2.0, 3.0, 4.0), 2.0, 1.5)
        pub.publish_event(EventMessage(NEW, event))
        pub.publish_line_crossing("cam1", "gate", event.id, i, "person", "in", ts=2.0)
    wait_until(lambda: flushed(pub), 30, "all acknowledged")
    assert pub.stats()["dropped"] > 0  # the flood did overflow the shared queue
    assert [m.json()["after"]["id"] for m in sub.wait_for_count(40, f"{ROOT}/events", timeout_s=10)] == \
        [f"1.5-cam1-{i}" for i in range(40)]
    assert len(sub.wait_for_count(40, f"{ROOT}/cameras/+/lines/+/crossing", timeout_s=10)) == 40


def test_detect_set_round_trip(mosquitto_broker, publisher_factory, mqtt_collector):
    got = []
    arrived = threading.Condition()

    def on_set(camera_id, enabled):
        with arrived:
            got.append((camera_id, enabled))
            arrived.notify_all()
        pub.publish_detect_state(camera_id, enabled)  # what the appliance does: the state follows

    pub = publisher_factory(mosquitto_broker)
    pub.on_detect_set(on_set, camera_known=lambda cam: cam in ("cam1", "cam2"))
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    states = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/detect/state")
    wait_until(lambda: pub.commands_subscribed, 5, "appliance subscribed")

    send(mosquitto_broker, f"{ROOT}/cameras/cam1/detect/set", b"OFF")
    send(mosquitto_broker, f"{ROOT}/cameras/cam9/detect/set", b"OFF")   # unknown camera
    send(mosquitto_broker, f"{ROOT}/cameras/cam2/detect/set", b"toggle")  # not ON/OFF
    send(mosquitto_broker, f"{ROOT}/cameras/cam2/detect/set", b"on")
    wait_until(lambda: len(got) >= 2, 5, "two commands delivered")
    state1 = states.wait_for_message(f"{ROOT}/cameras/cam1/detect/state")
    state2 = states.wait_for_message(f"{ROOT}/cameras/cam2/detect/state")
    assert got == [("cam1", False), ("cam2", True)]
    assert state1.payload == b"OFF" and state2.payload == b"ON"
    wait_until(lambda: pub.ignored_commands == 2, 5, "bad commands counted")


def test_detect_set_is_subscribed_again_after_a_broker_restart(mosquitto_factory, publisher_factory):
    broker = mosquitto_factory(persistence=False)  # nothing of the old session survives
    got = []
    pub = publisher_factory(broker)
    pub.on_detect_set(lambda cam, on: got.append((cam, on)))
    pub.start()
    wait_until(lambda: pub.commands_subscribed, 5, "subscribed")
    send(broker, f"{ROOT}/cameras/cam1/detect/set", b"OFF")
    wait_until(lambda: got == [("cam1", False)], 5, "first command")
    broker.kill()
    wait_until(lambda: not pub.connected and not pub.commands_subscribed, 5, "disconnect noticed")
    broker.start()
    wait_until(lambda: pub.commands_subscribed, 8, "subscribed again")
    send(broker, f"{ROOT}/cameras/cam1/detect/set", b"ON")
    wait_until(lambda: got == [("cam1", False), ("cam1", True)], 5, "command after the restart")


def test_a_retained_command_is_never_acted_on_neither_at_start_nor_after_a_reconnect(mosquitto_factory, publisher_factory):
    # `mosquitto_pub -r -t .../detect/set -m OFF` stays on the broker: it was applied at every
    # (re)subscription, turning analysis off again over the owner's later ON.
    broker = mosquitto_factory()  # persistent: the retained command outlives a restart
    send(broker, f"{ROOT}/cameras/cam1/detect/set", b"OFF", retain=True)
    got = []
    pub = publisher_factory(broker)
    pub.on_detect_set(lambda cam, on: got.append((cam, on)))
    pub.start()
    wait_until(lambda: pub.commands_subscribed and pub.ignored_commands == 1, 5, "the retained command ignored")
    send(broker, f"{ROOT}/cameras/cam1/detect/set", b"ON")  # the owner's live command
    wait_until(lambda: got == [("cam1", True)], 5, "the live command")
    # A new subscription after the broker's restart meets the retained OFF again.
    broker.stop()
    wait_until(lambda: not pub.commands_subscribed, 5, "disconnect noticed")
    broker.start()
    wait_until(lambda: pub.ignored_commands == 2, 10, "the retained command met and ignored again")
    send(broker, f"{ROOT}/cameras/cam1/detect/set", b"OFF")  # live, so acted on
    wait_until(lambda: got == [("cam1", True), ("cam1", False)], 5, "the second live command")


def test_a_handler_registered_after_connecting_subscribes_at_once(mosquitto_broker, publisher_factory):
    got = []
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    assert not pub.commands_subscribed
    pub.on_detect_set(lambda cam, on: got.append((cam, on)))
    wait_until(lambda: pub.commands_subscribed, 5, "subscribed")
    send(mosquitto_broker, f"{ROOT}/cameras/cam3/detect/set", b"OFF")
    wait_until(lambda: got == [("cam3", False)], 5, "command delivered")


def test_detect_state_is_published_again_after_an_outage(mosquitto_factory, publisher_factory, mqtt_collector):
    broker = mosquitto_factory(persistence=False)  # retained messages die with the broker
    pub = publisher_factory(broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.publish_detect_state("cam1", True)
    wait_until(lambda: flushed(pub), 5, "acknowledged")
    broker.kill()
    wait_until(lambda: not pub.connected, 5, "disconnect noticed")
    pub.publish_detect_state("cam1", False)  # while away: remembered
    broker.start()
    wait_until(lambda: flushed(pub), 8, "reconnected and flushed")
    late = mqtt_collector(broker, f"{ROOT}/cameras/+/detect/state")
    msg = late.wait_for_message(f"{ROOT}/cameras/cam1/detect/state")
    assert msg.retain and msg.payload == b"OFF"


def test_while_offline_only_the_latest_retained_value_per_topic_is_kept(mosquitto_factory, publisher_factory, mqtt_collector):
    broker = mosquitto_factory(persistence=False)
    pub = publisher_factory(broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.publish_object_count("cam1", "person", 1, ts=1.0)
    wait_until(lambda: flushed(pub), 5, "acknowledged")
    broker.kill()
    wait_until(lambda: not pub.connected, 5, "disconnect noticed")
    for i in range(200):
        pub.publish_snapshot("cam1", "person", JPEG + bytes([i]))
        pub.publish_object_count("cam1", "person", i % 5, ts=2.0 + i)
    pub.publish_line_crossing("cam1", "gate", None, 1, "person", "in", ts=3.0)  # not retained: queued
    assert pub.stats()["queued"] == 3  # the crossing, one count and one snapshot
    broker.start()
    wait_until(lambda: flushed(pub), 8, "reconnected and flushed")
    late = mqtt_collector(broker, f"{ROOT}/cameras/#")
    count = late.wait_for_message(f"{ROOT}/cameras/cam1/objects/person")
    snapshot = late.wait_for_message(f"{ROOT}/cameras/cam1/person/snapshot")
    assert count.json() == {"count": 199 % 5, "ts": 201.0, "model": "default"}
    assert snapshot.payload == JPEG + bytes([199])
    assert pub.stats()["dropped"] == 0
