"""The benchmark's subscriber in a process of its own, against a real Mosquitto broker.

The appliance under measurement must not also receive its own messages: ``WatcherProcess``
runs ``DetectionsWatcher`` in a child started with ``subprocess``, so the resource meter, which
counts ``multiprocessing`` children as decoder processes, leaves it out.
"""
import json
import time

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from bench.common.mqtt_watch import WatcherProcess
from bench.common.resources import ResourceMeter
from edge_app.health.cpu_groups import children_cpu_s

pytestmark = pytest.mark.slow


def _publish(host, port, messages):
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-watch-test-publisher")
    client.connect(host, port)
    client.loop_start()
    try:
        for topic, body in messages:
            client.publish(topic, json.dumps(body), qos=1).wait_for_publish(5)
    finally:
        client.disconnect()
        client.loop_stop()


def _wait_counts(watcher, expected, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while watcher.counts() != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return watcher.counts()


def test_the_watcher_process_counts_per_camera_and_records_only_while_asked(mosquitto_broker):
    host, port = mosquitto_broker.host, mosquitto_broker.port
    watcher = WatcherProcess(host, port, "bench/dev/+/detections", "dev-watch")
    assert watcher.start()
    try:
        assert watcher.pid not in children_cpu_s()  # not counted as the appliance's decoders
        now_s = time.time()
        _publish(host, port, [("bench/dev/cam0/detections", {"latency_ms": 5.0, "ts": now_s})])
        assert _wait_counts(watcher, {"cam0": 1}) == {"cam0": 1}
        watcher.recording = True
        _publish(host, port, [("bench/dev/cam1/detections", {"latency_ms": 7.5, "ts": now_s}),
                              ("bench/dev/cam1/detections", {"latency_ms": 9.0, "ts": now_s}),
                              ("bench/other/cam9/detections", {"latency_ms": 1.0, "ts": now_s})])
        assert _wait_counts(watcher, {"cam0": 1, "cam1": 2}) == {"cam0": 1, "cam1": 2}
        watcher.recording = False
        _publish(host, port, [("bench/dev/cam0/detections", {"latency_ms": 99.0, "ts": now_s})])
        assert _wait_counts(watcher, {"cam0": 2, "cam1": 2}) == {"cam0": 2, "cam1": 2}
        # only the messages received while recording, with the payload's latency
        assert sorted(watcher.latencies_ms()) == [7.5, 9.0]
        assert len(watcher.delivered_ms()) == 2 and all(d >= 0 for d in watcher.delivered_ms())
    finally:
        watcher.stop()
    assert watcher.pid is None


def test_the_watcher_process_says_so_when_there_is_no_broker(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free_port = s.getsockname()[1]
    watcher = WatcherProcess("127.0.0.1", free_port, "x/#", "nobody-watch")
    try:
        assert watcher.start(timeout_s=1.0) is False
    finally:
        watcher.stop()


def test_the_resource_meter_leaves_the_watcher_process_out(mosquitto_broker):
    watcher = WatcherProcess(mosquitto_broker.host, mosquitto_broker.port, "#", "meter-watch")
    assert watcher.start()
    try:
        meter = ResourceMeter()
        meter.start()
        _publish(mosquitto_broker.host, mosquitto_broker.port, [("t/a/detections", {"latency_ms": 1.0, "ts": time.time()})] * 50)
        usage = meter.stop()
    finally:
        watcher.stop()
    assert "decoders" not in usage.thread_cpu_s
