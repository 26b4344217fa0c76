"""The broker fixture other end-to-end tests rely on: restarts, persistence, the collector."""
import time

import paho.mqtt.publish as single
import pytest

from testkit.broker import MqttCollector
from testkit.net import port_accepts


def _publish(broker, topic, payload, retain=False, qos=1):
    single.single(topic, payload, qos=qos, retain=retain, hostname=broker.host, port=broker.port)


def test_restart_keeps_port_retained_messages_and_persistent_sessions(mosquitto_factory, mqtt_collector):
    broker = mosquitto_factory()
    port = broker.port
    sub = mqtt_collector(broker, "t/#", client_id="fixture-sub", clean_session=False)
    _publish(broker, "t/retained", "kept", retain=True)
    sub.wait_for_message("t/retained")
    broker.stop()
    assert not broker.running and not port_accepts(broker.host, port)
    broker.start()
    assert broker.port == port and port_accepts(broker.host, port)
    _publish(broker, "t/after", "routed while the subscriber reconnects")
    assert sub.wait_for_message("t/after", timeout_s=6).text.startswith("routed")
    late = mqtt_collector(broker, "t/retained")
    assert late.wait_for_message("t/retained").retain


def test_factory_doubles_as_its_default_broker(mosquitto_factory, mqtt_collector):
    assert port_accepts(mosquitto_factory.host, mosquitto_factory.port)
    sub = mqtt_collector(mosquitto_factory, "x", client_id="default-sub", clean_session=False)
    mosquitto_factory.stop()
    assert not port_accepts("127.0.0.1", mosquitto_factory.default().port)
    mosquitto_factory.start()
    _publish(mosquitto_factory, "x", "1")
    sub.wait_for_count(1, "x", timeout_s=6)


def test_two_brokers_are_independent(mosquitto_factory):
    a, b = mosquitto_factory(), mosquitto_factory(persistence=False)
    assert a.port != b.port
    a.stop()
    assert port_accepts(b.host, b.port)


def test_collector_wait_for_reports_what_arrived(mosquitto_broker, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, "y/#")
    _publish(mosquitto_broker, "y/1", '{"n": 1}')
    assert sub.wait_for(lambda msgs: [m.json()["n"] for m in msgs] == [1]) is True
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match="y/1"):
        sub.wait_for(lambda msgs: len(msgs) > 1, timeout_s=0.3)
    assert time.monotonic() - t0 < 1


def test_password_file_refuses_anonymous_clients(mosquitto_factory, mqtt_collector):
    broker = mosquitto_factory(users={"u": "p"})
    assert broker.password_file is not None and broker.password_file.exists()
    mqtt_collector(broker, "#", username="u", password="p")
    anonymous = MqttCollector(broker.host, broker.port, "#")
    try:
        with pytest.raises(AssertionError, match="not subscribed"):
            anonymous.start(timeout_s=1)
    finally:
        anonymous.stop()
