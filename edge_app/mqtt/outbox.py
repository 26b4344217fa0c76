"""The delivery core of the MQTT publisher: its queues, one lock, one client, one sender thread.

:class:`Outbox` owns everything the delivery rules of ``edge_app.mqtt.publisher`` speak about
(the bounded queue, the events' own lane, the retained states re-published on connect, the in-flight window, the
``connected`` state and the paho callbacks that move them). The publisher's extensions (events
and counts, Home Assistant, the fleet, link supervision) use only its public methods; none of
them touches its lock. Lock order: :meth:`sending` (the send lock) -> paho's locks -> the
outbox's condition, which is never held while calling into paho or into an extension. The paho
callbacks are ``outbox_callbacks``.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Set, Tuple

import paho.mqtt.client as mqtt

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import payloads
from edge_app.mqtt.message import (DETECTIONS as _DETECTIONS, EVENT as _EVENT, EVENTS, STATE as _STATE, STATUS as _STATUS,
                                   Message as _Message)
from edge_app.mqtt.outbox_callbacks import MessageHandler, PahoCallbacks, SubscriptionProvider, message
from edge_app.mqtt.topics import Topics
from edge_app.mqtt_takeover import TakeoverWatch

log = logging.getLogger(__name__)

#: the groups of retained states re-published on every connect, in this order
STATE_GROUPS = ("camera", "detect")
#: the most messages the sender hands to paho in one go (the in-flight window bounds it too)
MAX_BURST = 64
#: Events held while connected but not yet sent, beyond which the oldest go (a broker that takes nothing).
CONNECTED_EVENTS_CEILING = 100_000


class Outbox(PahoCallbacks):
    """Queue, lock, client and connection state of one MQTT publisher; thread-safe."""

    def __init__(self, config: MQTTConfig, topics: Topics, device_id: str, version: str, client_id: str,
                 max_inflight: int) -> None:
        self.config = config
        self.topics = topics
        self._device_id = device_id
        self._version = version
        self._client_id = client_id
        self._max_inflight = max(1, int(max_inflight))
        self._subscription_providers: List[SubscriptionProvider] = []
        self._message_handlers: List[MessageHandler] = []
        self._connect_hooks: List[Callable[[], None]] = []
        self.takeover = TakeoverWatch(client_id)  # has its own lock

        self._send_lock = threading.Lock()
        self._cond = threading.Condition()  # guards every attribute below
        self._queue: Deque[_Message] = collections.deque()
        self._priority: Deque[_Message] = collections.deque()  # camera states, sent first
        # Events and crossings, sent next: detections, counts and reports can fill the shared queue
        # (an inbound flood answered by reports did), and must never push an event out of it.
        self._events: Deque[_Message] = collections.deque()
        self._unacked: Dict[int, _Message] = {}
        self._early_acks: Set[int] = set()  # on_publish that beat the sender's bookkeeping
        self._states: Dict[str, Dict[str, _Message]] = {group: {} for group in STATE_GROUPS}
        self._offline_retained: Dict[str, _Message] = {}  # latest count/snapshot per topic while offline
        self._subscribed = False  # the broker acknowledged the subscriptions of this connection
        self._client: Optional[mqtt.Client] = None
        self._sender: Optional[threading.Thread] = None
        self._running = False
        self._stopping = False
        self._connected = False
        self._published = 0
        self._dropped = 0
        self._drop_warned = False
        self._last_error: Optional[str] = None

    # ------------------------------------------------- what the extensions use
    @property
    def enabled(self) -> bool:
        return self.config.enabled

    @property
    def max_inflight(self) -> int:
        return self._max_inflight

    @property
    def online(self) -> bool:
        """True between a CONNACK and the loss of that connection (paho's thread may be gone: see the publisher)."""
        with self._cond:
            return self._connected

    @property
    def client(self) -> Optional[mqtt.Client]:
        with self._cond:
            return self._client

    @property
    def subscribed(self) -> bool:
        """True while the broker has acknowledged the subscriptions of this connection."""
        with self._cond:
            return self._subscribed

    @property
    def last_error(self) -> Optional[str]:
        with self._cond:
            return self._last_error

    def enqueue(self, msg: _Message) -> None:
        """Queue a message; beyond ``max_queue`` the oldest one is dropped and counted."""
        with self._cond:
            if len(self._queue) >= self.config.max_queue:
                self._queue.popleft()
                self._count_drop()
            self._queue.append(msg)
            self._cond.notify_all()

    def enqueue_event(self, msg: _Message) -> None:
        """Queue an event or crossing in its own lane, sent before everything but the states.

        While the broker is connected no event is dropped: a backlog there is the sender catching
        up (events come a few a second at most), and only ``CONNECTED_EVENTS_CEILING`` guards the
        memory against a broker that takes nothing. Offline, the lane keeps the newest
        ``max_queue`` events, as the shared queue does; the dropped ones are counted.
        """
        with self._cond:
            bound = max(self.config.max_queue, CONNECTED_EVENTS_CEILING) if self._connected else self.config.max_queue
            while len(self._events) >= bound:
                self._events.popleft()
                self._count_drop(why="event queue full, dropping the oldest events")
            self._events.append(msg)
            self._cond.notify_all()

    def enqueue_latest(self, msg: _Message) -> None:
        """Queue a retained message; while offline only the latest one per topic is kept."""
        with self._cond:
            if not self._connected:
                self._offline_retained[msg.topic] = msg
                return
        self.enqueue(msg)

    def enqueue_json(self, topic: Callable[[], str], body: Callable[[], Dict[str, Any]], retain: bool) -> bool:
        """Queue ``body()`` on ``topic()`` with QoS 1; False (nothing built) while MQTT is disabled."""
        # Built lazily: with MQTT off, a bad label must not cost (or raise) anything.
        if not self.enabled:
            return False
        msg = _Message(topic(), payloads.encode(body()), 1, retain, EVENTS)
        if retain:
            self.enqueue_latest(msg)
        else:
            self.enqueue(msg)
        return True

    def keep_state(self, group: str, key: str, msg: _Message) -> None:
        """Publish a retained state now if connected and again after every reconnect (``STATE_GROUPS``)."""
        with self._cond:
            self._states[group][key] = msg
            if self._connected:
                self._priority.append(msg)
                self._cond.notify_all()

    def forget_states(self, key: str) -> None:
        """Stop re-publishing the states kept under ``key`` in every group."""
        with self._cond:
            for states in self._states.values():
                states.pop(key, None)

    def subscribe(self, subscriptions: List[Tuple[str, int]]) -> None:
        """Subscribe now when connected; make the subscriptions permanent with :meth:`add_connect_subscriptions`."""
        with self._cond:
            client = self._client if self._connected else None
        if client is not None and subscriptions:
            client.subscribe(subscriptions)

    def add_connect_subscriptions(self, provider: SubscriptionProvider) -> None:
        """Call ``provider()`` on every connect and subscribe to what it returns."""
        self._subscription_providers.append(provider)

    def add_connect_hook(self, hook: Callable[[], None]) -> None:
        """Call ``hook()`` on every connect, after the birth message and the subscriptions."""
        self._connect_hooks.append(hook)

    def add_message_handler(self, handler: MessageHandler) -> None:
        """Offer every inbound message to ``handler`` (in the order added) until one takes it."""
        self._message_handlers.append(handler)

    def note_error(self, text: str, level: int = logging.WARNING) -> None:
        # Retries repeat the same failure every few seconds; log each distinct reason once.
        with self._cond:
            repeated = text == self._last_error
            self._last_error = text
        log.log(logging.DEBUG if repeated else level, "%s", text)

    # --------------------------------------------- what the publisher's life uses
    def counts(self) -> Tuple[int, int, int]:
        """``(published, queued, dropped)``; queued counts everything not yet acknowledged."""
        with self._cond:
            queued = (len(self._queue) + len(self._priority) + len(self._events) + len(self._unacked)
                      + len(self._offline_retained))
            return self._published, queued, self._dropped

    def lag_s(self) -> float:
        """While connected, how long the oldest message not yet handed to paho has waited; 0 otherwise."""
        with self._cond:
            oldest = [lane[0].created_s for lane in (self._queue, self._events) if lane]
            if not self._connected or not oldest:
                return 0.0
            return max(0.0, time.monotonic() - min(oldest))

    def waiting(self) -> Tuple[Optional[mqtt.Client], bool, bool, int]:
        """``(client, stopping, connected, messages waiting for the broker while connected)``."""
        with self._cond:
            connected = self._connected
            waiting = len(self._queue) + len(self._priority) + len(self._events) + len(self._unacked) if connected else 0
            return self._client, self._stopping, connected, waiting

    def callbacks(self) -> Dict[str, Callable[..., Any]]:
        return {"on_connect": self._on_connect, "on_connect_fail": self._on_connect_fail,
                "on_disconnect": self._on_disconnect, "on_publish": self._on_publish,
                "on_message": self._on_message, "on_subscribe": self._on_subscribe}

    def attach(self, client: mqtt.Client) -> None:
        with self._cond:
            self._client = client
            self._running = True
            self._stopping = False

    @property
    def running(self) -> bool:
        with self._cond:
            return self._running and self._client is not None

    def start_sender(self) -> None:
        self._sender = threading.Thread(target=self._send_loop, name="mqtt-sender", daemon=True)
        self._sender.start()

    def drain(self, drain_until: float, deadline: float) -> int:
        """Wait while connected for the queue to empty, stop the sender; the number of messages left unsent."""
        with self._cond:
            while self._connected and self._pending() and time.monotonic() < drain_until:
                self._cond.wait(drain_until - time.monotonic())
            self._stopping = True
            left = len(self._queue) + len(self._priority) + len(self._events)
            self._cond.notify_all()
        if self._sender is not None:
            self._sender.join(max(0.1, deadline - time.monotonic()))
        return left

    def record(self, msg: _Message, info: mqtt.MQTTMessageInfo) -> None:
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
                if len(self._queue) < self.config.max_queue:
                    self._queue.appendleft(msg)
                else:
                    self._count_drop()
            else:
                self._count_drop(why=f"publish failed ({mqtt.error_string(info.rc)})")
                log.debug("MQTT publish on %s failed: %s", msg.topic, mqtt.error_string(info.rc))
            self._cond.notify_all()

    def detach(self) -> None:
        with self._cond:
            self._running = False
            self._connected = False
            self._client = None

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Hold the sender off (the send lock), e.g. while the socket is replaced."""
        with self._send_lock:
            yield

    def mark_link_lost(self, client: mqtt.Client) -> bool:
        """Mark ``client``'s link disconnected; False when it is no longer ours or we stop. Call within :meth:`sending`."""
        with self._cond:
            if self._stopping or self._client is not client:
                return False
            self._connected = False
            self._subscribed = False
            self._cond.notify_all()
            return True

    # ---------------------------------------------------------------- internals
    def _pending(self) -> bool:
        return bool(self._queue or self._priority or self._events or self._unacked)

    def _count_drop(self, n: int = 1, why: str = "offline queue full, dropping the oldest messages") -> None:
        """Called with ``_cond`` held; warns once per connection, the counter tells the rest."""
        self._dropped += n
        if not self._drop_warned:
            self._drop_warned = True
            log.warning("MQTT messages dropped: %s (max_queue %d)", why, self.config.max_queue)

    def _can_send(self) -> bool:
        return self._connected and bool(self._priority or self._events or self._queue) and len(self._unacked) < self._max_inflight

    def _send_loop(self) -> None:
        # Messages go to paho in bursts (as many as the window allows, one lock round for all):
        # under load every wake-up and every lock hand-over waits for the interpreter lock, so
        # one per message capped publishing below the engine's rate (bench/cpu/publish_latency.py).
        client = self._client
        while client is not None:
            with self._cond:
                while not self._stopping and not self._can_send():
                    self._cond.wait()
                if self._stopping:
                    return
            with self._send_lock:
                with self._cond:
                    room = min(self._max_inflight - len(self._unacked), MAX_BURST)
                    burst: List[_Message] = []
                    while len(burst) < room and self._connected:
                        lane = self._priority or self._events or self._queue
                        if not lane:
                            break
                        burst.append(lane.popleft())
                for msg in burst:
                    try:
                        info = client.publish(msg.topic, msg.payload, qos=msg.qos, retain=msg.retain)
                    except ValueError as exc:  # e.g. a payload over the MQTT size limit
                        with self._cond:
                            self._count_drop(why="payload not publishable")
                        log.error("MQTT message on %s not publishable: %s", msg.topic, exc)
                        continue
                    self.record(msg, info)

    def _take_back_unacked(self, returned: List[mqtt.MQTTMessage]) -> None:
        """Called with ``_cond`` held, on connect: re-queue what the last connection left unacknowledged."""
        requeue: List[_Message] = []
        requeue_events: List[_Message] = []
        for m in returned:
            ours = self._unacked.pop(m.mid, None)
            if ours is None:
                is_state = self.topics.is_camera_state(m.topic) or self.topics.is_detect_state(m.topic)
                kind = _STATE if is_state else _STATUS if m.topic == self.topics.status else _DETECTIONS
                ours = _Message(m.topic, bytes(m.payload), m.qos, bool(m.retain), kind)
            # States and the birth are superseded by what on_connect publishes anyway.
            if ours.kind == _EVENT:
                requeue_events.append(ours)
            elif ours.kind not in (_STATE, _STATUS):
                requeue.append(ours)
        lost_qos0 = sum(1 for msg in self._unacked.values() if msg.qos == 0 and msg.kind != _STATUS)
        if lost_qos0:
            self._count_drop(lost_qos0, why="QoS 0 messages lost with the connection")
        self._unacked.clear()
        self._early_acks.clear()
        self._queue.extendleft(reversed(requeue))
        self._events.extendleft(reversed(requeue_events))
        self._queue.extend(self._offline_retained.values())  # after older values of the same topics
        self._offline_retained.clear()
        while len(self._queue) > self.config.max_queue:
            self._queue.popleft()
            self._count_drop()
        self._priority = collections.deque(msg for group in STATE_GROUPS for msg in self._states[group].values())
        if requeue or requeue_events:
            log.info("MQTT re-sending %d messages left unacknowledged by the last connection",
                     len(requeue) + len(requeue_events))
