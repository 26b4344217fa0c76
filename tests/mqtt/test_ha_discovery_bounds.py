"""Home Assistant discovery is bounded both ways: what the appliance publishes and what it reads back."""
from __future__ import annotations

import json
import time

import pytest

from edge_app.config.file import ConfigError, parse_config
from edge_app.mqtt import ha_discovery
from edge_app.mqtt.topics import Topics
from tests.mqtt.conftest import VERSION
from tests.mqtt.helpers import wait_until
from tests.mqtt.test_ha_discovery import DISCOVERY, LABELS, _raw, _started, send

NESTED = b"[" * 100000 + b"]" * 100000
COCO = [f"label{i}" for i in range(80)]


def _many_cameras(n: int, **homeassistant):
    return _raw(cameras=[{"id": f"cam{i}", "source": "test://box",
                          "lines": [{"name": f"gate{i}", "points": [[0.5, 0], [0.5, 1]]}]} for i in range(n)],
                homeassistant={"enabled": True, **homeassistant})


def _fake(n: int) -> dict:
    """A discovery message naming ``n`` components shaped like the appliance's own keys."""
    return {"dev": {"ids": ["edge-app-dev1"]}, "o": {"name": "edge-app"},
            "cmps": {f"cam_x{i}_{i:010x}": {"p": "sensor", "name": "x"} for i in range(n)}}


# -- what is published ---------------------------------------------------------------------------------
def test_discovery_is_capped_in_entities_and_bytes_keeping_the_switches_first():
    config = parse_config(_many_cameras(16))
    message = ha_discovery.build_discovery(config, Topics("edge_app", "dev1"), VERSION, COCO)
    cmps = message["cmps"]
    assert len(cmps) == config.homeassistant.max_entities == 500  # 5 + 16 x (3 + 80 x 3 + 2) entities wanted
    assert len(json.dumps(message).encode()) <= ha_discovery.MAX_DISCOVERY_BYTES
    assert sum(1 for c in cmps.values() if c["p"] == "switch") == 16
    assert sum(1 for c in cmps.values() if c.get("state_topic") == "edge_app/dev1/health") == 5  # kept first too
    assert sum(1 for c in cmps.values() if c.get("device_class") == "motion") == 16  # kept right after the switches
    assert sum(1 for c in cmps.values() if "/review/alerts" in c.get("state_topic", "")) == 16  # with motion
    assert sum(1 for c in cmps.values() if c["p"] == "image") == 0  # snapshots go first when over the cap
    build = ha_discovery.build_capped_discovery(config, Topics("edge_app", "dev1"), VERSION, COCO)
    assert build.message == message and build.left_out == 5 + 16 * (3 + 80 * 3 + 2) - 500


def test_a_small_configuration_is_not_capped():
    config = parse_config(_raw())
    build = ha_discovery.build_capped_discovery(config, Topics("edge_app", "dev1"), VERSION, LABELS)
    assert build.left_out == 0


@pytest.mark.parametrize("value", [0, 1001, "many"])
def test_max_entities_is_bounded(value):
    with pytest.raises(ConfigError):
        parse_config(_raw(homeassistant={"enabled": True, "max_entities": value}))


# -- what is read back ---------------------------------------------------------------------------------
@pytest.mark.parametrize("payload", [NESTED, b"{" * 5000, b"\xff\xfe", b'{"cmps": NaN}',
                                     b'{"cmps": {}, "pad": "' + b"x" * (2 * ha_discovery.MAX_DISCOVERY_BYTES) + b'"}'])
def test_hostile_discovery_messages_read_back_are_ignored(payload):
    assert ha_discovery.parse(payload) is None


def test_only_a_short_online_is_a_birth():
    assert ha_discovery.is_birth(b" online\n")
    assert not ha_discovery.is_birth(b"online" + b" " * 100000)


def test_a_fake_discovery_message_sent_live_is_not_answered(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = _started(publisher_factory, mosquitto_broker)
    ha = mqtt_collector(mosquitto_broker, DISCOVERY)
    ha.wait_for_message(DISCOVERY)
    fake = json.dumps(_fake(5000)).encode()
    send(mosquitto_broker, DISCOVERY, fake)
    ha.wait_for_count(2, DISCOVERY)
    time.sleep(1.0)
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "nothing left to send")
    assert [len(m.payload) for m in ha.messages(DISCOVERY)[1:]] == [len(fake)]  # only the fake itself
    assert pub.stats()["callback_errors"] == {}


def test_a_retained_fake_is_answered_with_a_bounded_withdrawal(mosquitto_broker, publisher_factory, mqtt_collector):
    send(mosquitto_broker, DISCOVERY, json.dumps(_fake(5000)).encode(), retain=True)
    ha = mqtt_collector(mosquitto_broker, DISCOVERY)
    ha.wait_for_message(DISCOVERY)
    pub = _started(publisher_factory, mosquitto_broker)
    own = ha_discovery.build_discovery(parse_config(_raw()), Topics("edge_app", "dev1"), VERSION, LABELS)
    ha.wait_for(lambda msgs: any(m.json() == own for m in msgs), 5)
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "sent")
    answers = ha.messages(DISCOVERY)[1:]
    withdrawn = [key for m in answers for key, body in m.json()["cmps"].items() if body == {"p": "sensor"}]
    assert 0 < len(withdrawn) <= 500
    assert all(len(m.payload) <= len(json.dumps(own)) + 500 * 64 for m in answers)


def test_a_retained_nested_message_is_read_without_a_callback_error(mosquitto_broker, publisher_factory):
    send(mosquitto_broker, DISCOVERY, NESTED, retain=True)
    pub = _started(publisher_factory, mosquitto_broker)
    time.sleep(0.5)
    assert pub.stats()["callback_errors"] == {} and pub.connected
