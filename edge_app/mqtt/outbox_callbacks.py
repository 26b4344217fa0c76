"""The paho callbacks of the MQTT publisher's :class:`~edge_app.mqtt.outbox.Outbox`: connect (birth,
messages left unacknowledged, subscriptions), connection failures and losses, acknowledgements,
incoming messages and subscription answers.

A part of the outbox (its base class), kept apart so each module stays readable; they run on
paho's network thread and keep the outbox's lock order (``edge_app.mqtt.outbox``).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import paho.mqtt.client as mqtt

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import payloads
from edge_app.mqtt.message import STATUS as _STATUS, Message as _Message
from edge_app.mqtt_takeover import TakeoverWatch
from edge_app.mqtt.topics import Topics

log = logging.getLogger(__name__)

#: ``provider()`` -> ``[(topic, qos)]`` subscribed on every connect (the session is clean)
SubscriptionProvider = Callable[[], List[Tuple[str, int]]]
#: ``handler(topic, payload, retained)`` -> True when the message was its own (handled or dropped)
MessageHandler = Callable[[str, bytes, bool], bool]


def message(topic: str, body: Dict[str, Any], qos: int, retain: bool, kind: str) -> _Message:
    return _Message(topic, payloads.encode(body), int(qos), retain, kind)


class PahoCallbacks:
    """The outbox's paho callbacks (see the module's docstring)."""

    # Set by Outbox.__init__.
    config: MQTTConfig
    topics: Topics
    _device_id: str
    _version: str
    _client_id: str
    _max_inflight: int
    _subscription_providers: List[SubscriptionProvider]
    _message_handlers: List[MessageHandler]
    _connect_hooks: List[Callable[[], None]]
    _send_lock: threading.Lock
    _cond: threading.Condition
    _unacked: Dict[int, _Message]
    _early_acks: Set[int]
    _subscribed: bool
    _stopping: bool
    _connected: bool
    _published: int
    _drop_warned: bool
    _last_error: Optional[str]
    takeover: TakeoverWatch

    # What Outbox provides.
    def note_error(self, text: str, level: int = logging.WARNING) -> None:
        raise NotImplementedError

    def record(self, msg: _Message, info: mqtt.MQTTMessageInfo) -> None:
        raise NotImplementedError

    def _take_back_unacked(self, returned: List[mqtt.MQTTMessage]) -> None:
        raise NotImplementedError

    def _count_drop(self, n: int = 1, why: str = "offline queue full, dropping the oldest messages") -> None:
        raise NotImplementedError

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        if reason_code.is_failure:
            self.note_error(f"MQTT broker {self.config.host}:{self.config.port} refused the connection: {reason_code}")
            return
        birth = message(self.topics.status, payloads.status_payload("online", self._device_id, self._version), 1, True, _STATUS)
        with self._send_lock:
            returned = client.drop_out_messages()
            with self._cond:
                self._take_back_unacked(returned)
                self._connected = True
                self._last_error = None
                self._drop_warned = False
            info = client.publish(birth.topic, birth.payload, qos=birth.qos, retain=birth.retain)
            self.record(birth, info)
        # A clean session forgets subscriptions: make them again on every connect.
        subscriptions = [sub for provider in self._subscription_providers for sub in provider()]
        if subscriptions:
            client.subscribe(subscriptions)
        for hook in self._connect_hooks:
            hook()
        log.info("MQTT connected to %s:%d as %r", self.config.host, self.config.port, self._client_id)

    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        # paho does not pass the exception on; name the usual suspects.
        self.note_error(
            f"cannot connect to MQTT broker {self.config.host}:{self.config.port} "
            "(unreachable, connection refused or TLS handshake failed); retrying"
        )

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        with self._cond:
            was_connected, self._connected = self._connected, False
            self._subscribed = False
            stopping = self._stopping
            self._cond.notify_all()
        if was_connected and not stopping:
            self.note_error(f"MQTT connection to {self.config.host}:{self.config.port} lost ({reason_code}); reconnecting")
            if self.takeover.closed(time.monotonic(), reason_code):
                log.warning("%s", self.takeover.report(time.monotonic()).warning)

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason_code: Any, properties: Any) -> None:
        with self._cond:
            msg = self._unacked.pop(mid, None)
            if msg is None:
                self._early_acks.add(mid)
            elif getattr(reason_code, "is_failure", False):
                self._count_drop(why="rejected by the broker")
                log.warning("MQTT broker rejected a message on %s: %s", msg.topic, reason_code)
            else:
                self._published += 1
            # Wake the sender when half the window is free (it then sends a burst), not on every
            # acknowledgement; and whoever waits for everything to be acknowledged (drain).
            if len(self._unacked) <= self._max_inflight // 2:
                self._cond.notify_all()

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        for handler in self._message_handlers:
            if handler(msg.topic, msg.payload, bool(msg.retain)):
                return

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reason_codes: Any, properties: Any) -> None:
        refused = [code for code in reason_codes if getattr(code, "is_failure", False)]
        with self._cond:
            self._subscribed = not refused
            self._cond.notify_all()
        if refused:
            self.note_error(f"MQTT broker refused the subscription to {self.topics.all_detect_set}: {refused[0]}")
