"""Publishes the appliance's MQTT messages (docs/mqtt.md) and survives broker outages.

Delivery design
---------------
* Pipeline threads never touch the network: ``publish_*`` only appends to an in-memory queue
  (bounded by ``max_queue``; beyond it the oldest message is dropped and counted) and wakes a
  sender thread, which is the only caller of ``Client.publish`` for queued messages. Events and
  line crossings have a lane of their own (its own ``max_queue`` bound), sent before the shared
  queue, so detections, counts and reports, however many, never push an event out while the
  broker is connected.
* The sender hands at most ``max_inflight`` unacknowledged messages to paho at a time and
  counts a message as published only when ``on_publish`` fires (PUBACK/PUBCOMP for QoS 1/2,
  written to the socket for QoS 0). Everything else stays in our bounded queue, so a silently
  dead link (noticed only after 1.5 x keepalive) cannot grow paho's unbounded internal store.
  It hands them over in bursts and is woken when half the window is free, not per message:
  at the engine's full rate, with the pipeline's threads busy, each wake-up waits for the
  interpreter lock, and one per message (with a window of 32) held QoS 1 to about 1,000
  messages/s on a 2-core machine (bench/cpu/publish_latency.py, bench/README.md).
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

The queue, the lock, the client and the connection state live in one
:class:`~edge_app.mqtt.outbox.Outbox`; the parts above (``ExtensionPublisher``, ``HaPublisher``,
``FleetPublisher``, ``LinkSupervisor``) get it by composition and use only its public methods,
and :class:`MqttPublisher` wires them together and delegates to them.

Lock order (to stay deadlock-free next to paho's own locks, which are held while paho calls
``on_publish``): the outbox's send lock -> paho's locks -> the outbox's condition. The
condition is never held while calling into paho; a part's own lock is never held while
calling the outbox.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

import paho.mqtt.client as mqtt

from edge_app.config.schema import AppConfig, MQTTConfig
from edge_app.events.model import EventMessage
from edge_app.mqtt import payloads
from edge_app.mqtt.client_setup import appliance_client_id, new_client
from edge_app.mqtt.detect_set_commands import DetectSetHandler
from edge_app.mqtt.extension_publishing import ExtensionPublisher
from edge_app.mqtt.profile_commands import ProfilePublisher, ProfileSetHandler
from edge_app.mqtt.fleet_publishing import DesiredHandler, FleetPublisher
from edge_app.mqtt.ha_publishing import HaPublisher
from edge_app.mqtt.link_stall_watch import LinkHealth
from edge_app.mqtt.link_supervision import LinkSupervisor, loop_alive
from edge_app.mqtt.message import DETECTIONS as _DETECTIONS, STATE as _STATE, STATS as _STATS, STATUS as _STATUS
from edge_app.mqtt.outbox import Outbox, message as _message
from edge_app.mqtt.topics import Topics
from edge_app.track.speed import SpeedReading

if TYPE_CHECKING:
    from edge_app.events.zone_stats import ZoneStats
    from edge_app.review.feed import ReviewMessage

log = logging.getLogger(__name__)

#: the oldest queued message has waited this long: status says publishing is behind, and why
BEHIND_AFTER_MS = 1000.0


class MqttPublisher:
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
        max_inflight: int = 256,
        connect_timeout_s: float = 5.0,
        stall_after_s: Optional[float] = None,
    ) -> None:
        self._config = config
        self._device_id = device_id
        self._version = version
        self.topics = Topics(config.topic_prefix, device_id)
        self.client_id = appliance_client_id(config, device_id)
        self._reconnect_delays_s = (reconnect_min_delay_s, max(reconnect_min_delay_s, reconnect_max_delay_s))
        self._connect_timeout_s = connect_timeout_s
        self._outbox = Outbox(config, self.topics, device_id, version, self.client_id, max_inflight)
        self._extensions = ExtensionPublisher(self._outbox)
        self._ha = HaPublisher(self._outbox, device_id, version)
        self._fleet = FleetPublisher(self._outbox)
        self._profiles = ProfilePublisher(self._outbox)
        self._link = LinkSupervisor(self._outbox, stall_after_s)
        # On connect: detect/set, then Home Assistant's topics, then R/config/desired; then the discovery.
        for part in (self._extensions, self._ha, self._fleet, self._profiles):
            self._outbox.add_connect_subscriptions(part.connect_subscriptions)
        self._outbox.add_connect_hook(self._ha.on_connected)
        # Inbound: Home Assistant and the fleet take their own topics, detect/set gets the rest.
        for part in (self._ha, self._fleet, self._profiles, self._extensions):
            self._outbox.add_message_handler(part.handle)

    # ----------------------------------------------------------------- public API
    @property
    def enabled(self) -> bool:
        return self._config.enabled

    @property
    def connected(self) -> bool:
        """True while connected and paho's network thread reads the link."""
        client = self._outbox.client
        return self._outbox.online and client is not None and loop_alive(client)

    @property
    def last_error(self) -> Optional[str]:
        """Why the last connection attempt failed or the connection dropped; None once connected."""
        return self._outbox.last_error

    @property
    def _client(self) -> Optional[mqtt.Client]:
        return self._outbox.client

    @property
    def _subscribed(self) -> bool:
        return self._outbox.subscribed

    def stats(self) -> Dict[str, Any]:
        """``{"connected", "published", "queued", "dropped", "stalled", "stall_reason", "loop_restarts",
        "callback_errors", "lag_ms", "behind_reason", "closed_by_broker", "takeover_warning"}``.

        ``queued`` counts messages not yet acknowledged by the broker: waiting in the offline
        queue plus handed to the network but not acknowledged. ``callback_errors`` maps a paho
        callback (``on_message``...) to the exceptions the guard caught in it
        (``edge_app.mqtt.link_supervision``).
        """
        link = self._link.stats()
        published, queued, dropped = self._outbox.counts()
        lag_ms = round(self._outbox.lag_s() * 1000.0, 1)
        takeover = self._outbox.takeover.report(time.monotonic())
        return {"connected": link.pop("connected"), "published": published, "queued": queued,
                "dropped": dropped, **link, "lag_ms": lag_ms, "behind_reason": self._behind_reason(lag_ms),
                "closed_by_broker": takeover.closes_total, "takeover_warning": takeover.warning}

    def _behind_reason(self, lag_ms: float) -> Optional[str]:
        """Why messages wait, once the oldest has waited over ``BEHIND_AFTER_MS``; None otherwise."""
        if lag_ms < BEHIND_AFTER_MS:
            return None
        return (f"publishing is {lag_ms / 1000.0:.1f} s behind: messages come faster than the broker link takes them "
                f"(QoS {self._config.qos}, at most {self._outbox.max_inflight} unacknowledged; a busy interpreter "
                "slows paho's network thread). Lower the cameras' fps_limit, use QoS 0, or leave publish_empty off")

    def link_health(self) -> LinkHealth:
        """Whether the MQTT link is stalled, and why."""
        return self._link.health()

    def start(self) -> None:
        """Begin connecting in the background (paho's network thread) and return at once."""
        if not self.enabled or self._outbox.running:
            return
        offline = payloads.status_payload("offline", self._device_id, self._version)
        try:
            client = new_client(self._config, self.client_id, self._reconnect_delays_s, self._connect_timeout_s,
                                self.topics.status, payloads.encode(offline))
            client.connect_async(self._config.host, self._config.port, keepalive=self._config.keepalive)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            # A bad certificate path must not take the appliance down; stay disconnected, say why.
            self._outbox.note_error(f"MQTT TLS/connection setup failed: {exc}", logging.ERROR)
            return
        self._link.install(client, self._outbox.callbacks())
        self._outbox.attach(client)
        client.loop_start()
        self._link.start()
        self._outbox.start_sender()
        log.info("MQTT publisher for %s:%d started as %r", self._config.host, self._config.port, self.client_id)

    def stop(self, timeout_s: float = 3.0) -> None:
        """Flush what it can, publish the retained ``offline`` status, disconnect.

        Waits at most about ``timeout_s``: half of it for queued messages, the rest for the
        ``offline`` message to be acknowledged.
        """
        client = self._outbox.client
        if not self._outbox.running or client is None:
            return
        deadline = time.monotonic() + timeout_s
        left = self._outbox.drain(time.monotonic() + timeout_s / 2, deadline)
        self._link.stop(deadline - time.monotonic())
        if left:
            log.warning("MQTT publisher stopping with %d unsent messages", left)
        offline = _message(self.topics.status, payloads.status_payload("offline", self._device_id, self._version), 1, True, _STATUS)
        info = client.publish(offline.topic, offline.payload, qos=offline.qos, retain=offline.retain)
        if self.connected:
            self._outbox.record(offline, info)
            try:
                info.wait_for_publish(max(0.1, deadline - time.monotonic()))
                if not info.is_published():
                    log.warning("MQTT offline status not acknowledged within %.1f s", timeout_s)
            except (RuntimeError, ValueError) as exc:
                log.warning("MQTT offline status not sent: %s", exc)
        client.disconnect()
        client.loop_stop()
        self._outbox.detach()
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
        self._outbox.enqueue(_message(topic, payload, self._config.qos, False, _DETECTIONS))
        return True

    def publish_stats(self, payload: Dict[str, Any]) -> bool:
        """Queue one ``R/stats`` message (QoS ``config.qos``, not retained)."""
        if not self.enabled:
            return False
        self._outbox.enqueue(_message(self.topics.stats, payload, self._config.qos, False, _STATS))
        return True

    def publish_camera_state(self, camera_id: str, state: str, error: Optional[str] = None, ts: Optional[float] = None) -> bool:
        """Publish a camera's retained state (QoS 1); re-published after every reconnect."""
        if not self.enabled:
            return False
        body = payloads.camera_state_payload(state, error, ts)
        self._outbox.keep_state("camera", camera_id, _message(self.topics.camera_state(camera_id), body, 1, True, _STATE))
        return True

    def forget_camera(self, camera_id: str) -> None:
        """Stop re-publishing the state of a camera that was removed from the configuration."""
        self._outbox.forget_states(camera_id)

    # ------------------------------------- delegated to the parts (see their modules)
    def publish_event(self, message: EventMessage) -> bool:
        return self._extensions.publish_event(message)

    def publish_review(self, message: "ReviewMessage") -> bool:
        return self._extensions.publish_review(message)

    def publish_review_alerts(self, camera_id: str, count: int, ts: Optional[float] = None) -> bool:
        return self._extensions.publish_review_alerts(camera_id, count, ts)

    def publish_object_count(self, camera_id: str, label: str, count: int, ts: Optional[float] = None,
                             model: str = "default") -> bool:
        return self._extensions.publish_object_count(camera_id, label, count, ts, model)

    def publish_zone_count(self, zone: str, label: str, count: int, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        return self._extensions.publish_zone_count(zone, label, count, ts, model)

    def publish_zone_stats(self, zone: str, stats: "ZoneStats", ts: Optional[float] = None,
                           model: str = "default") -> bool:
        return self._extensions.publish_zone_stats(zone, stats, ts, model)

    def publish_line_count(self, camera_id: str, line: str, count_in: int, count_out: int, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        return self._extensions.publish_line_count(camera_id, line, count_in, count_out, ts, model)

    def publish_line_crossing(self, camera_id: str, line: str, event_id: Optional[str], track_id: int, label: str,
                              direction: str, ts: Optional[float] = None, model: str = "default",
                              speed: Optional[SpeedReading] = None) -> bool:
        return self._extensions.publish_line_crossing(camera_id, line, event_id, track_id, label, direction, ts, model,
                                                      speed)

    def publish_snapshot(self, camera_id: str, label: str, jpeg: bytes) -> bool:
        return self._extensions.publish_snapshot(camera_id, label, jpeg)

    def publish_health(self, body: Dict[str, Any]) -> bool:
        return self._extensions.publish_health(body)

    def publish_detect_state(self, camera_id: str, enabled: bool) -> bool:
        return self._extensions.publish_detect_state(camera_id, enabled)

    def publish_motion(self, camera_id: str, motion: bool) -> bool:
        return self._extensions.publish_motion(camera_id, motion)

    def on_detect_set(self, handler: DetectSetHandler, camera_known: Optional[Callable[[str], bool]] = None) -> None:
        self._extensions.on_detect_set(handler, camera_known)

    @property
    def commands_subscribed(self) -> bool:
        return self._extensions.commands_subscribed

    @property
    def ignored_commands(self) -> int:
        return self._extensions.ignored_commands

    def set_ha_discovery(self, config: AppConfig, labels: Sequence[str]) -> bool:
        return self._ha.set_ha_discovery(config, labels)

    def withdraw_ha_discovery_unless(self, device_id: str) -> None:
        self._ha.withdraw_ha_discovery_unless(device_id)

    def on_config_desired(self, handler: DesiredHandler) -> None:
        self._fleet.on_config_desired(handler)

    def publish_config_reported(self, body: Dict[str, Any]) -> bool:
        return self._fleet.publish_config_reported(body)

    def publish_profile(self, body: Dict[str, Any]) -> bool:
        return self._profiles.publish_profile(body)

    def on_profile_set(self, handler: ProfileSetHandler, profiles: Callable[[], List[str]]) -> None:
        self._profiles.on_profile_set(handler, profiles)
