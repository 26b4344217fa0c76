"""The publisher against a real Mosquitto: retained status and states, QoS, last will, auth."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.mqtt.helpers import detection, frame_ids_by_camera, wait_until

ROOT = "edge_app/dev1"
REPO = Path(__file__).resolve().parents[2]


def _online(m):
    return m.json()["state"] == "online"


def test_birth_is_retained_for_late_subscribers(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.stats()["published"] >= 1, 5, "birth acknowledged")
    late = mqtt_collector(mosquitto_broker, f"{ROOT}/status")
    msg = late.wait_for_message(f"{ROOT}/status")
    assert msg.retain and msg.qos == 1
    assert msg.json()["state"] == "online"
    assert msg.json()["device_id"] == "dev1" and msg.json()["version"] == "9.8.7"
    assert isinstance(msg.json()["ts"], float)


def test_camera_state_is_retained(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.publish_camera_state("cam1", "connecting")
    pub.publish_camera_state("cam1", "error", "connection refused")
    wait_until(lambda: pub.stats()["queued"] == 0 and pub.stats()["published"] >= 3, 5, "states acknowledged")
    late = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/state")
    msg = late.wait_for_message(f"{ROOT}/cameras/cam1/state")
    assert msg.retain
    assert msg.json() == {"state": "error", "ts": msg.json()["ts"], "error": "connection refused"}


def test_detections_arrive_with_qos1_not_retained_in_order(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/detections", qos=1)
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    for i in range(1, 21):
        pub.publish_detections("cam1", detection("cam1", i))
    msgs = sub.wait_for_count(20, f"{ROOT}/cameras/cam1/detections")
    assert all(m.qos == 1 and not m.retain for m in msgs)
    assert [m.json()["frame_id"] for m in msgs] == list(range(1, 21))
    assert msgs[0].json()["detections"][0]["label"] == "person"
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "all acknowledged")
    stats = pub.stats()
    assert stats["connected"] and stats["dropped"] == 0 and stats["published"] >= 21


def test_stats_topic_not_retained(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/stats")
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    pub.publish_stats({"fps": 12.0, "latency_ms": 3.0, "queue": 0, "dropped": 0})
    msg = sub.wait_for_message(f"{ROOT}/stats")
    assert not msg.retain and msg.json()["fps"] == 12.0


def test_concurrent_publishers_keep_per_camera_order(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/cameras/+/detections")
    pub = publisher_factory(mosquitto_broker, max_inflight=8)
    pub.start()
    cameras = [f"cam{i}" for i in range(4)]

    def produce(cam):
        for i in range(1, 151):
            pub.publish_detections(cam, detection(cam, i))

    threads = [threading.Thread(target=produce, args=(c,)) for c in cameras]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sub.wait_for_count(600, f"{ROOT}/cameras/+/detections", timeout_s=15)
    by_cam = frame_ids_by_camera(sub.payloads(f"{ROOT}/cameras/+/detections"))
    assert by_cam == {c: list(range(1, 151)) for c in cameras}


def test_clean_stop_publishes_retained_offline(mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, f"{ROOT}/status")
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    sub.wait_for_message(f"{ROOT}/status", _online)
    t0 = time.monotonic()
    pub.stop(timeout_s=3)
    assert time.monotonic() - t0 < 3.5
    offline = sub.wait_for_message(f"{ROOT}/status", lambda m: m.json()["state"] == "offline")
    assert offline.json()["device_id"] == "dev1" and offline.json()["version"] == "9.8.7"
    assert not pub.connected
    late = mqtt_collector(mosquitto_broker, f"{ROOT}/status")
    retained = late.wait_for_message(f"{ROOT}/status")
    assert retained.retain and retained.json()["state"] == "offline"


_CHILD = """
import sys, time
from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import MqttPublisher
pub = MqttPublisher(MQTTConfig(host="127.0.0.1", port=int(sys.argv[1]), keepalive=5), "willdev", "1.0.0")
pub.start()
while not pub.connected:
    time.sleep(0.02)
print("CONNECTED", flush=True)
time.sleep(120)
"""


def test_last_will_offline_when_the_process_dies(mosquitto_broker, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, "edge_app/willdev/status")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(mosquitto_broker.port)], stdout=subprocess.PIPE, env=env, cwd=REPO)
    try:
        assert child.stdout.readline().strip() == b"CONNECTED"
        sub.wait_for_message("edge_app/willdev/status", _online)
        child.send_signal(signal.SIGKILL)
        child.wait(5)
        will = sub.wait_for_message("edge_app/willdev/status", lambda m: m.json()["state"] == "offline", timeout_s=5)
        assert set(will.json()) == {"state", "device_id", "version", "ts"}
        assert will.json()["device_id"] == "willdev" and will.json()["version"] == "1.0.0"
    finally:
        child.kill()
        child.wait()
    late = mqtt_collector(mosquitto_broker, "edge_app/willdev/status")
    assert late.wait_for_message("edge_app/willdev/status").json()["state"] == "offline"


def test_username_password(mosquitto_factory, publisher_factory, mqtt_collector):
    broker = mosquitto_factory(users={"edge": "s3cret", "viewer": "look"})
    sub = mqtt_collector(broker, f"{ROOT}/#", username="viewer", password="look")
    pub = publisher_factory(broker, username="edge", password="s3cret")
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected with the right password")
    pub.publish_detections("cam1", detection("cam1", 1))
    sub.wait_for_message(f"{ROOT}/cameras/cam1/detections")


def test_wrong_password_is_reported_not_raised(mosquitto_factory, publisher_factory, caplog):
    broker = mosquitto_factory(users={"edge": "s3cret"})
    pub = publisher_factory(broker, username="edge", password="wrong")
    with caplog.at_level(logging.WARNING, logger="edge_app.mqtt.publisher"):
        pub.start()
        wait_until(lambda: pub.last_error is not None, 5, "a refused connection")
        time.sleep(1.5)  # a retry happens meanwhile; it must not crash or spam
    assert pub.stats()["connected"] is False
    assert "refused" in pub.last_error
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1, [r.getMessage() for r in caplog.records]
    assert pub.publish_detections("cam1", detection("cam1", 1)) is True
    assert pub.stats()["queued"] == 1


def test_start_with_broker_down_returns_at_once_and_connects_later(mosquitto_factory, publisher_factory, mqtt_collector):
    broker = mosquitto_factory(start=False)
    pub = publisher_factory(broker)
    t0 = time.monotonic()
    pub.start()
    assert time.monotonic() - t0 < 0.5
    pub.publish_camera_state("cam1", "connecting")
    pub.publish_detections("cam1", detection("cam1", 1))
    time.sleep(1.2)
    assert pub.stats()["connected"] is False and pub.stats()["queued"] == 1
    assert "unreachable" in (pub.last_error or "")
    broker.start()
    sub = mqtt_collector(broker, f"{ROOT}/#")
    wait_until(lambda: pub.connected, 6, "connected once the broker is up")
    sub.wait_for_message(f"{ROOT}/status", _online)
    assert sub.wait_for_message(f"{ROOT}/cameras/cam1/state").json()["state"] == "connecting"
    sub.wait_for_message(f"{ROOT}/cameras/cam1/detections")
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "queue flushed")
    assert pub.last_error is None


def test_stop_while_broker_down_is_quick(mosquitto_factory, publisher_factory):
    broker = mosquitto_factory(start=False)
    pub = publisher_factory(broker)
    pub.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    pub.stop(timeout_s=1)
    assert time.monotonic() - t0 < 2.5
