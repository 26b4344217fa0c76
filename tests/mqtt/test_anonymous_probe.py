"""The anonymous probe against real brokers: one that welcomes anyone, one with a password file, none."""
import time

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt.anonymous_probe import ProbeOutcome, probe_anonymous
from tests.support.net import free_port


def test_an_open_broker_is_found_open(mosquitto_factory):
    broker = mosquitto_factory()
    probe = probe_anonymous(MQTTConfig(host=broker.host, port=broker.port))
    assert probe.outcome is ProbeOutcome.ACCEPTED and probe.accepted


def test_a_broker_with_a_password_file_refuses_and_the_appliances_login_is_not_used(mosquitto_factory):
    broker = mosquitto_factory(users={"dev1": "dev1-Pa55"})
    config = MQTTConfig(host=broker.host, port=broker.port, username="dev1", password="dev1-Pa55")
    probe = probe_anonymous(config)
    assert probe.outcome is ProbeOutcome.REFUSED and not probe.accepted
    assert "without a login" in probe.detail


def test_no_broker_is_unknown_not_refused_and_quick():
    started = time.monotonic()
    probe = probe_anonymous(MQTTConfig(host="127.0.0.1", port=free_port()), timeout_s=2)
    assert probe.outcome is ProbeOutcome.UNKNOWN and time.monotonic() - started < 3
