"""Publishes the appliance's MQTT messages (docs/mqtt.md) and survives broker outages.

Delivery design
---------------
* Pipeline threads never touch the network: ``publish_*`` only appends to an in-memory queue
  (bounded by ``max_queue``; beyond it the oldest message is dropped and counted) and wakes a
  sender thread, which is the only caller of ``Client.publish`` for queued messages.
* The sender hands at most ``max_inflight`` unacknowledged messages to paho at a time and
  counts a message as published only when ``on_publish`` fires (PUBACK/PUBCOMP for QoS 1/2,
  written to the socket for QoS 0). Everything else stays in our bounded queue, so a silently
  dead link (noticed only after 1.5 x keepalive) cannot grow paho's unbounded internal store.
* paho keeps unacknowledged QoS>0 messages in memory and, whatever ``clean_session`` says,
  re-sends them after the next CONNACK. It does so *after* ``on_connect`` returns, i.e. behind
  anything published from ``on_connect`` or by another thread meanwhile, which would reorder a
  camera's detections and could leave a stale retained camera state. So ``on_connect`` takes
  them back with ``Client.drop_out_messages()`` and puts them at the head of our queue in their
  original order; nothing relies on a persistent broker session (``clean_session=True``).
  A message whose PUBACK was lost with the connection is therefore sent again: delivery is
  at-least-once, duplicates are possible, loss and reordering are not.
* Camera states are retained and superseded by the next one, so while the broker is away only
  the latest state per camera is remembered (not queued) and it is re-published on every
  (re)connect, right after the retained ``online`` birth message. The ``detect/state`` of each
  camera is treated the same way.
* Events, counts, crossings, snapshots and the ``detect/set`` subscription: see
  ``edge_app.mqtt.extension_publishing``; ``R/config/desired`` and ``reported``: see
  ``edge_app.mqtt.fleet_publishing``.
* Every paho callback runs under one guard, paho's network thread is supervised and started
  again should it end, and a link that stopped moving is reported as stalled: see
  ``edge_app.mqtt.link_supervision``.

Lock order (to stay deadlock-free next to paho's own locks, which are held while paho calls
``on_publish``): ``_send_lock`` -> paho's locks -> ``_cond``. ``_cond`` is never held while
calling into paho.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Deque, Dict, List, Optional, Set

import paho.mqtt.client as mqtt

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import payloads
from edge_app.mqtt.client_setup import new_client
from edge_app.mqtt.commands import DetectSetCommands
from edge_app.mqtt.extension_publishing import ExtensionPublishing
from edge_app.mqtt.fleet_publishing import FleetPublishing
from edge_app.mqtt.ha_publishing import HaPublishing
from edge_app.mqtt.link_supervision import LinkSupervision, loop_alive
from edge_app.mqtt.message import DETECTIONS as _DETECTIONS, STATE as _STATE, STATS as _STATS, STATUS as _STATUS, Message as _Message
from edge_app.mqtt.topics import Topics

log = logging.getLogger(__name__)


class MqttPublisher(ExtensionPublishing, HaPublishing, FleetPublishing, LinkSupervision):
    """The appliance's MQTT client. Thread-safe; ``start()`` never waits for the broker.

    With ``config.enabled`` false every method is a no-op and ``stats()`` reports zeros.
    """

    def __init__(
        self,
        config: MQTTConfig,
        device_id: str,
        version: str,
        *,
        reconnect_min_delay_s: float = 1.0,
        reconnect_max_delay_s: float = 30.0,
        max_inflight: int = 32,
        connect_timeout_s: float = 5.0,
        stall_after_s: Optional[float] = None,
    ) -> None:
        self._config = config
        self._device_id = device_id
        self._version = version
        self.topics = Topics(config.topic_prefix, device_id)
        self.client_id = config.client_id or f"edge-app-{device_id}"
        self._reconnect_delays_s = (reconnect_min_delay_s, max(reconnect_min_delay_s, reconnect_max_delay_s))
        self._max_inflight = max(1, int(max_inflight))
        self._connect_timeout_s = connect_timeout_s

        self._send_lock = threading.Lock()
        self._cond = threading.Condition()  # guards every attribute below
        self._queue: Deque[_Message] = collections.deque()
        self._priority: Deque[_Message] = collections.deque()  # camera states, sent first
        self._unacked: Dict[int, _Message] = {}
        self._early_acks: Set[int] = set()  # on_publish that beat the sender's bookkeeping
        self._camera_states: Dict[str, _Message] = {}
        self._detect_states: Dict[str, _Message] = {}
        self._offline_retained: Dict[str, _Message] = {}  # latest count/snapshot per topic while offline
        self._commands: Optional[DetectSetCommands] = None
        self._subscribed = False  # the broker acknowledged the detect/set subscription
        self._client: Optional[mqtt.Client] = None
        self._sender: Optional[threading.Thread] = None
        self._running = False
        self._stopping = False
        self._connected = False
        self._published = 0
        self._dropped = 0
        self._drop_warned = False
        self._last_error: Optional[str] = None
        self._ha_init()
        self._link_init(stall_after_s)

    # ----------------------------------------------------------------- public API
    @property
    def enabled(self) -> bool:
        return self._config.enabled

    @property
    def connected(self) -> bool:
        """True while connected and paho's network thread reads the link."""
        with self._cond:
            connected, client = self._connected, self._client
        return connected and client is not None and loop_alive(client)

    @property
    def last_error(self) -> Optional[str]:
        """Why the last connection attempt failed or the connection dropped; None once connected."""
        with self._cond:
            return self._last_error

    def stats(self) -> Dict[str, Any]:
        """``{"connected", "published", "queued", "dropped", "stalled", "stall_reason", "loop_restarts",
        "callback_errors"}``.

        ``queued`` counts messages not yet acknowledged by the broker: waiting in the offline
        queue plus handed to the network but not acknowledged. ``callback_errors`` maps a paho
        callback (``on_message``...) to the exceptions the guard caught in it
        (``edge_app.mqtt.link_supervision``).
        """
        link = self._link_stats()
        with self._cond:
            queued = len(self._queue) + len(self._priority) + len(self._unacked) + len(self._offline_retained)
            return {"connected": link.pop("connected"), "published": self._published, "queued": queued,
                    "dropped": self._dropped, **link}

    def start(self) -> None:
        """Begin connecting in the background (paho's network thread) and return at once."""
        if not self.enabled or self._running:
            return
        offline = payloads.status_payload("offline", self._device_id, self._version)
        try:
            client = new_client(self._config, self.client_id, self._reconnect_delays_s, self._connect_timeout_s,
                                self.topics.status, payloads.encode(offline))
            client.connect_async(self._config.host, self._config.port, keepalive=self._config.keepalive)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            # A bad certificate path must not take the appliance down; stay disconnected, say why.
            self._note_error(f"MQTT TLS/connection setup failed: {exc}", logging.ERROR)
            return
        self._link_install(client, {
            "on_connect": self._on_connect, "on_connect_fail": self._on_connect_fail,
            "on_disconnect": self._on_disconnect, "on_publish": self._on_publish,
            "on_message": self._on_message, "on_subscribe": self._on_subscribe,
        })
        with self._cond:
            self._client = client
            self._running = True
            self._stopping = False
        client.loop_start()
        self._link_start()
        self._sender = threading.Thread(target=self._send_loop, name="mqtt-sender", daemon=True)
        self._sender.start()
        log.info("MQTT publisher for %s:%d started as %r", self._config.host, self._config.port, self.client_id)

    def stop(self, timeout_s: float = 3.0) -> None:
        """Flush what it can, publish the retained ``offline`` status, disconnect.

        Waits at most about ``timeout_s``: half of it for queued messages, the rest for the
        ``offline`` message to be acknowledged.
        """
        client = self._client
        if not self._running or client is None:
            return
        deadline = time.monotonic() + timeout_s
        drain_until = time.monotonic() + timeout_s / 2
        with self._cond:
            while self._connected and self._pending() and time.monotonic() < drain_until:
                self._cond.wait(drain_until - time.monotonic())
            self._stopping = True
            left = len(self._queue) + len(self._priority)
            self._cond.notify_all()
        if self._sender is not None:
            self._sender.join(max(0.1, deadline - time.monotonic()))
        self._link_stop(deadline - time.monotonic())
        if left:
            log.warning("MQTT publisher stopping with %d unsent messages", left)
        offline = self._message(self.topics.status, payloads.status_payload("offline", self._device_id, self._version), 1, True, _STATUS)
        info = client.publish(offline.topic, offline.payload, qos=offline.qos, retain=offline.retain)
        if self.connected:
            self._record(offline, info)
            try:
                info.wait_for_publish(max(0.1, deadline - time.monotonic()))
                if not info.is_published():
                    log.warning("MQTT offline status not acknowledged within %.1f s", timeout_s)
            except (RuntimeError, ValueError) as exc:
                log.warning("MQTT offline status not sent: %s", exc)
        client.disconnect()
        client.loop_stop()
        with self._cond:
            self._running = False
            self._connected = False
            self._client = None
        log.info("MQTT publisher stopped")

    def publish_detections(self, camera_id: str, payload: Dict[str, Any]) -> bool:
        """Queue one detections message (QoS ``config.qos``, not retained).

        Returns False when nothing is queued: MQTT disabled, or an empty frame while
        ``publish_empty`` is off.
        """
        if not self.enabled:
            return False
        if not self._config.publish_empty and "detections" in payload and not payload["detections"]:
            return False
        topic = self.topics.camera_detections(camera_id)
        self._enqueue(self._message(topic, payload, self._config.qos, False, _DETECTIONS))
        return True

    def publish_stats(self, payload: Dict[str, Any]) -> bool:
        """Queue one ``R/stats`` message (QoS ``config.qos``, not retained)."""
        if not self.enabled:
            return False
        self._enqueue(self._message(self.topics.stats, payload, self._config.qos, False, _STATS))
        return True

    def publish_camera_state(self, camera_id: str, state: str, error: Optional[str] = None, ts: Optional[float] = None) -> bool:
        """Publish a camera's retained state (QoS 1); re-published after every reconnect."""
        if not self.enabled:
            return False
        body = payloads.camera_state_payload(state, error, ts)
        msg = self._message(self.topics.camera_state(camera_id), body, 1, True, _STATE)
        with self._cond:
            self._camera_states[camera_id] = msg
            if self._connected:
                self._priority.append(msg)
                self._cond.notify_all()
        return True

    def forget_camera(self, camera_id: str) -> None:
        """Stop re-publishing the state of a camera that was removed from the configuration."""
        with self._cond:
            self._camera_states.pop(camera_id, None)
            self._detect_states.pop(camera_id, None)

    # ---------------------------------------------------------------- internals
    @staticmethod
    def _message(topic: str, body: Dict[str, Any], qos: int, retain: bool, kind: str) -> _Message:
        return _Message(topic, payloads.encode(body), int(qos), retain, kind)

    def _pending(self) -> bool:
        return bool(self._queue or self._priority or self._unacked)

    def _enqueue(self, msg: _Message) -> None:
        with self._cond:
            if len(self._queue) >= self._config.max_queue:
                self._queue.popleft()
                self._count_drop()
            self._queue.append(msg)
            self._cond.notify_all()

    def _count_drop(self, n: int = 1, why: str = "offline queue full, dropping the oldest messages") -> None:
        """Called with ``_cond`` held; warns once per connection, the counter tells the rest."""
        self._dropped += n
        if not self._drop_warned:
            self._drop_warned = True
            log.warning("MQTT messages dropped: %s (max_queue %d)", why, self._config.max_queue)

    def _note_error(self, text: str, level: int = logging.WARNING) -> None:
        # Retries repeat the same failure every few seconds; log each distinct reason once.
        with self._cond:
            repeated = text == self._last_error
            self._last_error = text
        log.log(logging.DEBUG if repeated else level, "%s", text)

    def _can_send(self) -> bool:
        return self._connected and bool(self._priority or self._queue) and len(self._unacked) < self._max_inflight

    def _send_loop(self) -> None:
        client = self._client
        while client is not None:
            with self._cond:
                while not self._stopping and not self._can_send():
                    self._cond.wait()
                if self._stopping:
                    return
            with self._send_lock:
                with self._cond:
                    if not self._can_send():
                        continue
                    msg = self._priority.popleft() if self._priority else self._queue.popleft()
                try:
                    info = client.publish(msg.topic, msg.payload, qos=msg.qos, retain=msg.retain)
                except ValueError as exc:  # e.g. a payload over the MQTT size limit
                    with self._cond:
                        self._count_drop(why="payload not publishable")
                    log.error("MQTT message on %s not publishable: %s", msg.topic, exc)
                    continue
                self._record(msg, info)

    def _record(self, msg: _Message, info: mqtt.MQTTMessageInfo) -> None:
        """Book a message just handed to paho, keyed by its mid until ``on_publish``."""
        with self._cond:
            held_by_paho = info.rc == mqtt.MQTT_ERR_SUCCESS or (msg.qos > 0 and info.rc == mqtt.MQTT_ERR_NO_CONN)
            if held_by_paho:
                if info.mid in self._early_acks:
                    self._early_acks.discard(info.mid)
                    self._published += 1
                else:
                    self._unacked[info.mid] = msg
            elif info.rc == mqtt.MQTT_ERR_NO_CONN and msg.kind != _STATUS:
                # QoS 0 is not kept by paho when there is no socket: put it back where it was.
                if len(self._queue) < self._config.max_queue:
                    self._queue.appendleft(msg)
                else:
                    self._count_drop()
            else:
                self._count_drop(why=f"publish failed ({mqtt.error_string(info.rc)})")
                log.debug("MQTT publish on %s failed: %s", msg.topic, mqtt.error_string(info.rc))
            self._cond.notify_all()

    def _take_back_unacked(self, returned: List[mqtt.MQTTMessage]) -> None:
        """Called with ``_cond`` held, on connect: re-queue what the last connection left unacknowledged."""
        requeue: List[_Message] = []
        for m in returned:
            ours = self._unacked.pop(m.mid, None)
            if ours is None:
                is_state = self.topics.is_camera_state(m.topic) or self.topics.is_detect_state(m.topic)
                kind = _STATE if is_state else _STATUS if m.topic == self.topics.status else _DETECTIONS
                ours = _Message(m.topic, bytes(m.payload), m.qos, bool(m.retain), kind)
            # States and the birth are superseded by what on_connect publishes anyway.
            if ours.kind not in (_STATE, _STATUS):
                requeue.append(ours)
        lost_qos0 = sum(1 for msg in self._unacked.values() if msg.qos == 0 and msg.kind != _STATUS)
        if lost_qos0:
            self._count_drop(lost_qos0, why="QoS 0 messages lost with the connection")
        self._unacked.clear()
        self._early_acks.clear()
        self._queue.extendleft(reversed(requeue))
        self._queue.extend(self._offline_retained.values())  # after older values of the same topics
        self._offline_retained.clear()
        while len(self._queue) > self._config.max_queue:
            self._queue.popleft()
            self._count_drop()
        self._priority = collections.deque(list(self._camera_states.values()) + list(self._detect_states.values()))
        if requeue:
            log.info("MQTT re-sending %d messages left unacknowledged by the last connection", len(requeue))

    # ------------------------------------------------------------ paho callbacks
    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        if reason_code.is_failure:
            self._note_error(f"MQTT broker {self._config.host}:{self._config.port} refused the connection: {reason_code}")
            return
        birth = self._message(self.topics.status, payloads.status_payload("online", self._device_id, self._version), 1, True, _STATUS)
        with self._send_lock:
            returned = client.drop_out_messages()
            with self._cond:
                self._take_back_unacked(returned)
                self._connected = True
                self._last_error = None
                self._drop_warned = False
            info = client.publish(birth.topic, birth.payload, qos=birth.qos, retain=birth.retain)
            self._record(birth, info)
            with self._cond:
                commands = self._commands
        # A clean session forgets subscriptions: make them again on every connect.
        subscriptions = (([(commands.subscription, 1)] if commands is not None else []) + self._ha_connect_subscriptions()
                         + self._fleet_connect_subscriptions())
        if subscriptions:
            client.subscribe(subscriptions)
        self._ha_send()
        log.info("MQTT connected to %s:%d as %r", self._config.host, self._config.port, self.client_id)

    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        # paho does not pass the exception on; name the usual suspects.
        self._note_error(
            f"cannot connect to MQTT broker {self._config.host}:{self._config.port} "
            "(unreachable, connection refused or TLS handshake failed); retrying"
        )

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        with self._cond:
            was_connected, self._connected = self._connected, False
            self._subscribed = False
            stopping = self._stopping
            self._cond.notify_all()
        if was_connected and not stopping:
            self._note_error(f"MQTT connection to {self._config.host}:{self._config.port} lost ({reason_code}); reconnecting")

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
            self._cond.notify_all()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        if (self._ha_handle(message.topic, message.payload, bool(message.retain))
                or self._fleet_handle(message.topic, message.payload)):
            return
        commands = self._commands
        if commands is not None:
            commands.handle(message.topic, message.payload)

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reason_codes: Any, properties: Any) -> None:
        refused = [code for code in reason_codes if getattr(code, "is_failure", False)]
        with self._cond:
            self._subscribed = not refused
            self._cond.notify_all()
        if refused:
            self._note_error(f"MQTT broker refused the subscription to {self.topics.all_detect_set}: {refused[0]}")
