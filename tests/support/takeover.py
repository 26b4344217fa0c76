"""A client that takes another's MQTT session over, again and again (``edge_app.mqtt_takeover``)."""
from __future__ import annotations

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

#: long enough for three rounds of paho's reconnect delays on a loaded machine
TAKEN_OVER_S = 45


class Thief:
    """Connects with someone else's client id and reconnects as soon as it is thrown out."""

    def __init__(self, broker, client_id: str) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.reconnect_delay_set(0.5, 1)
        self.client.connect(broker.host, broker.port, keepalive=5)
        self.client.loop_start()

    def stop(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


__all__ = ["TAKEN_OVER_S", "Thief"]
