"""Home Assistant discovery on the publisher: sent, re-sent and withdrawn at the right moments.

A part of :class:`edge_app.mqtt.publisher.MqttPublisher`, like ``extension_publishing``; it
uses only the public methods of the publisher's :class:`~edge_app.mqtt.outbox.Outbox`.

* ``set_ha_discovery(config, labels)`` builds the message (``edge_app.mqtt.ha_discovery``) and
  sends it retained with QoS 1 when it differs from the last one, with a removal message first
  when cameras, zones, lines or labels went away. Turning discovery off clears the retained
  message (empty payload), which makes Home Assistant remove the device.
* On every connect the message is sent again and the publisher subscribes to Home Assistant's
  birth topic (``<prefix>/status``: ``online`` means "send discovery again") and to its own
  discovery topic: the retained message a previous run left there names the components that
  run had, so ones removed from the configuration while the appliance was down are withdrawn too.
  Only a retained copy is read that way (a live message there is our own echo or someone
  else's), at most ``max_entities`` components of it, at most once every
  ``RESEND_MIN_INTERVAL_S``: a forged message is never answered with more than an honest one.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import List, Optional, Sequence, Tuple

from edge_app.config.schema import AppConfig
from edge_app.mqtt import ha_discovery, payloads
from edge_app.mqtt.message import EVENTS, Message
from edge_app.mqtt.outbox import Outbox

log = logging.getLogger(__name__)

#: Anyone on the broker can publish "online" or junk on the topics we read: answer at most this often.
RESEND_MIN_INTERVAL_S = 5.0


class HaPublisher:
    """Home Assistant MQTT discovery of the publisher's device."""

    def __init__(self, outbox: Outbox, device_id: str, version: str) -> None:
        self._outbox = outbox
        self.topics = outbox.topics
        self._device_id = device_id
        self._version = version
        self._lock = threading.Lock()  # guards the attributes below; never held while calling the outbox
        self._ha_topic: Optional[str] = None  # the discovery topic in use; None while discovery is off
        self._ha_birth: Optional[str] = None
        self._ha_message: Optional[dict] = None
        self._ha_max_entities = 0
        self._ha_pending: List[Message] = []  # removals to send before the next full message
        self._ha_answered_mono_s: Optional[float] = None  # when a message from outside last made us send

    def set_ha_discovery(self, config: AppConfig, labels: Sequence[str]) -> bool:
        """Publish the discovery of ``config`` (or clear it when disabled); False when nothing changed."""
        if not self._outbox.enabled:
            return False
        settings = config.homeassistant
        with self._lock:
            old_topic, old_message = self._ha_topic, self._ha_message
        if not settings.enabled:
            if old_topic is None:
                return False
            with self._lock:
                self._ha_topic = self._ha_birth = self._ha_message = None
                self._ha_pending = []
            self._outbox.enqueue(Message(old_topic, b"", 1, True, EVENTS))
            log.info("Home Assistant discovery withdrawn from %s", old_topic)
            return True
        build = ha_discovery.build_capped_discovery(config, self.topics, self._version, labels)
        message = build.message
        if build.left_out and message != old_message:
            log.warning("Home Assistant discovery: %d entities left out to stay within %d entities and %d bytes",
                        build.left_out, settings.max_entities, ha_discovery.MAX_DISCOVERY_BYTES)
        topic = ha_discovery.discovery_topic(settings.discovery_prefix, config.device_id)
        birth = ha_discovery.birth_topic(settings.discovery_prefix)
        if topic == old_topic and message == old_message:
            return False
        removal = ha_discovery.removal_message(message, ha_discovery.platforms(old_message)) if topic == old_topic else None
        with self._lock:
            self._ha_topic, self._ha_birth, self._ha_message = topic, birth, message
            self._ha_max_entities = settings.max_entities
            if removal is not None:
                self._ha_pending.append(Message(topic, payloads.encode(removal), 1, True, EVENTS))
        client = self._outbox.client if self._outbox.online else None
        if old_topic is not None and old_topic != topic:
            self._outbox.enqueue(Message(old_topic, b"", 1, True, EVENTS))  # the prefix moved: no device left behind
        if client is not None:
            if topic != old_topic:
                # Before the message itself, so the retained one of an earlier run is read back first.
                client.subscribe([(sub, 1) for sub in self._ha_subscriptions()])
            self._ha_send()
        log.info("Home Assistant discovery on %s: %d entities", topic, len(message["cmps"]))
        return True

    def withdraw_ha_discovery_unless(self, device_id: str) -> None:
        """Before this publisher stops for one of a new device id: clear its device from Home Assistant."""
        with self._lock:
            topic = self._ha_topic
            self._ha_topic = self._ha_birth = self._ha_message = None
        if topic is not None and device_id != self._device_id:
            self._outbox.enqueue(Message(topic, b"", 1, True, EVENTS))

    def _ha_subscriptions(self) -> List[str]:
        with self._lock:
            return [] if self._ha_topic is None else [self._ha_birth, self._ha_topic]

    def _ha_send(self, extra_removal: Optional[dict] = None) -> None:
        """Queue the pending removals, then the full message (retained, QoS 1)."""
        with self._lock:
            topic, message, pending = self._ha_topic, self._ha_message, self._ha_pending
            self._ha_pending = []
        if topic is None or message is None:
            return
        for removal in pending:
            self._outbox.enqueue(removal)
        if extra_removal is not None:
            self._outbox.enqueue(Message(topic, payloads.encode(extra_removal), 1, True, EVENTS))
        self._outbox.enqueue(Message(topic, payloads.encode(message), 1, True, EVENTS))

    def connect_subscriptions(self) -> List[Tuple[str, int]]:
        """Subscribed on every connect, before :meth:`on_connected` queues the discovery again."""
        return [(sub, 1) for sub in self._ha_subscriptions()]

    def on_connected(self) -> None:
        """Queue the discovery again on every connect (the retained copy may be gone)."""
        self._ha_send()

    def handle(self, topic: str, payload: bytes, retained: bool = False) -> bool:
        """A message on Home Assistant's birth topic or our discovery topic; False for anything else."""
        with self._lock:
            ha_topic, birth, message = self._ha_topic, self._ha_birth, self._ha_message
            max_entities = self._ha_max_entities
        if ha_topic is None or message is None or topic not in (ha_topic, birth):
            return False
        if topic == birth:
            if ha_discovery.is_birth(payload) and self._ha_may_answer():
                log.info("Home Assistant is online: sending discovery again")
                self._ha_send()
            return True
        # Our own topic: a retained message of an earlier run, or a live one (our echo, or anyone's).
        if not retained:
            return True
        stale = ha_discovery.earlier_components(ha_discovery.parse(payload), message, max_entities)
        if stale and self._ha_may_answer():
            log.info("Home Assistant discovery: withdrawing %d entities of an earlier configuration", len(stale))
            self._ha_send(ha_discovery.removal_message(message, stale))
        return True

    def _ha_may_answer(self) -> bool:
        now_mono_s = time.monotonic()
        with self._lock:
            last = self._ha_answered_mono_s
            if last is not None and now_mono_s - last < RESEND_MIN_INTERVAL_S:
                log.debug("Home Assistant discovery answered %.1f s ago; not again yet", now_mono_s - last)
                return False
            self._ha_answered_mono_s = now_mono_s
            return True
