"""The publisher's side of the fleet (docs/fleet.md): the ``R/config/desired`` subscription, ``R/config/reported``.

A mixin of :class:`edge_app.mqtt.publisher.MqttPublisher`, like ``extension_publishing``; it
relies on the publisher's lock (``_cond``), client and ``_enqueue_json``. The subscription is
made on the appliance's own connection (so a broker ACL can let each appliance read only its own
desired configuration) and again after every reconnect, as the session is clean: the broker then
hands over the retained desired message, which is how an appliance that was away catches up.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

log = logging.getLogger(__name__)

#: ``handler(payload)`` for every message on ``R/config/desired``; runs on paho's network thread
DesiredHandler = Callable[[bytes], None]


class FleetPublishing:
    """``on_config_desired`` and ``publish_config_reported`` for :class:`MqttPublisher`."""

    _config_desired: Optional[DesiredHandler] = None

    def on_config_desired(self, handler: DesiredHandler) -> None:
        """Subscribe to ``R/config/desired`` (QoS 1) and call ``handler(payload)`` for each message.

        The handler runs on paho's network thread and must only hand the payload on.
        """
        with self._cond:
            self._config_desired = handler
            client = self._client if self._connected else None
        if client is not None:
            client.subscribe(self.topics.config_desired, qos=1)

    def publish_config_reported(self, body: Dict[str, Any]) -> bool:
        """Retained ``R/config/reported`` (QoS 1); while offline only the latest is kept, then sent."""
        return self._enqueue_json(lambda: self.topics.config_reported, lambda: body, retain=True)

    def _fleet_connect_subscriptions(self) -> List[Tuple[str, int]]:
        return [(self.topics.config_desired, 1)] if self._config_desired is not None else []

    def _fleet_handle(self, topic: str, payload: bytes) -> bool:
        """True when the message was for the fleet side (handled or dropped here)."""
        handler = self._config_desired
        if handler is None or topic != self.topics.config_desired:
            return False
        try:
            handler(bytes(payload))
        except Exception:  # a failing handler must not take paho's network thread down
            log.exception("handling a desired configuration failed")
        return True
