"""Fixtures of the MQTT tests: publishers that are always stopped, with short reconnect delays."""
from __future__ import annotations

from typing import Any, List

import pytest

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import MqttPublisher

DEVICE_ID = "dev1"
VERSION = "9.8.7"


@pytest.fixture
def publisher_factory():
    """``publisher_factory(broker, **mqtt_config) -> MqttPublisher`` (not started)."""
    made: List[MqttPublisher] = []

    def make(broker: Any, *, device_id: str = DEVICE_ID, max_inflight: int = 32, **fields: Any) -> MqttPublisher:
        config = MQTTConfig(host=broker.host, port=broker.port, **fields)
        publisher = MqttPublisher(
            config, device_id, VERSION, reconnect_min_delay_s=1, reconnect_max_delay_s=2, max_inflight=max_inflight
        )
        made.append(publisher)
        return publisher

    yield make
    for publisher in made:
        publisher.stop(timeout_s=1)
