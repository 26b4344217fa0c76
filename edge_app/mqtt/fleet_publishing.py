"""The publisher's side of the fleet (docs/fleet.md): the ``R/config/desired`` subscription, ``R/config/reported``.

A part of :class:`edge_app.mqtt.publisher.MqttPublisher`, like ``extension_publishing``; it
uses only the public methods of the publisher's :class:`~edge_app.mqtt.outbox.Outbox`. The subscription is
made on the appliance's own connection (so a broker ACL can let each appliance read only its own
desired configuration) and again after every reconnect, as the session is clean: the broker then
hands over the retained desired message, which is how an appliance that was away catches up.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

from edge_app.mqtt.outbox import Outbox

log = logging.getLogger(__name__)

#: ``handler(payload)`` for every message on ``R/config/desired``; runs on paho's network thread
DesiredHandler = Callable[[bytes], None]


class FleetPublisher:
    """``on_config_desired`` and ``publish_config_reported`` for :class:`MqttPublisher`."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.topics = outbox.topics
        self._config_desired: Optional[DesiredHandler] = None  # one reference, read and replaced whole

    def on_config_desired(self, handler: DesiredHandler) -> None:
        """Subscribe to ``R/config/desired`` (QoS 1) and call ``handler(payload)`` for each message.

        The handler runs on paho's network thread and must only hand the payload on.
        """
        self._config_desired = handler
        self._outbox.subscribe([(self.topics.config_desired, 1)])

    def publish_config_reported(self, body: Dict[str, Any]) -> bool:
        """Retained ``R/config/reported`` (QoS 1); while offline only the latest is kept, then sent."""
        return self._outbox.enqueue_json(lambda: self.topics.config_reported, lambda: body, retain=True)

    def connect_subscriptions(self) -> List[Tuple[str, int]]:
        return [(self.topics.config_desired, 1)] if self._config_desired is not None else []

    def handle(self, topic: str, payload: bytes, retained: bool = False) -> bool:
        """True when the message was for the fleet side (handled or dropped here)."""
        handler = self._config_desired
        if handler is None or topic != self.topics.config_desired:
            return False
        try:
            handler(bytes(payload))
        except Exception:  # a failing handler must not take paho's network thread down
            log.exception("handling a desired configuration failed")
        return True
