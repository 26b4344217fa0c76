"""Topics of the publisher beyond detections, states and stats: events, counts, crossings, snapshots, detect, motion.

A part of :class:`edge_app.mqtt.publisher.MqttPublisher`, kept apart so each module stays
readable; it uses only the public methods of the publisher's :class:`~edge_app.mqtt.outbox.Outbox`.
Events and crossings have a lane of their own in the publisher's outbox, sent before detections,
counts and reports, so none of those can crowd an event out; all with QoS 1. Counts, line totals and snapshots are retained, so only the latest value of a topic
matters: while the broker is away, only that is kept per topic (a JPEG per label rather than
thousands), and sent after reconnecting. ``detect/state`` is remembered per camera and re-published after every reconnect,
like camera states.

Subscription: ``on_detect_set(handler)`` makes the publisher subscribe to
``R/cameras/+/detect/set`` (again after every reconnect, as the session is clean) and call
``handler(camera_id, enabled)`` on paho's network thread for every valid ``ON``/``OFF`` that is not
retained; anything else on that topic is ignored (``edge_app.mqtt.detect_set_commands``).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from edge_app.events.model import EventMessage
from edge_app.mqtt import payloads
from edge_app.mqtt.detect_set_commands import DetectSetCommands, DetectSetHandler
from edge_app.mqtt.message import EVENT, EVENTS, STATE, Message
from edge_app.mqtt.outbox import Outbox
from edge_app.track.speed import SpeedReading

if TYPE_CHECKING:
    from edge_app.events.zone_stats import ZoneStats
    from edge_app.review.feed import ReviewMessage


class ExtensionPublisher:
    """Publish methods for the topics of events, counts, lines, snapshots (docs/mqtt.md) and the ``detect/set`` subscription."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.topics = outbox.topics
        self._lock = threading.Lock()
        self._commands: Optional[DetectSetCommands] = None

    def publish_event(self, message: EventMessage) -> bool:
        """Queue one ``R/events`` message (QoS 1, not retained) in the events' own lane."""
        if not self._outbox.enabled:
            return False
        self._outbox.enqueue_event(Message(self.topics.events, payloads.encode(message.to_dict()), 1, False, EVENT))
        return True

    def publish_review(self, message: "ReviewMessage") -> bool:
        """Queue one ``R/reviews`` message (QoS 1, not retained) in the events' lane, like ``R/events``."""
        if not self._outbox.enabled:
            return False
        self._outbox.enqueue_event(Message(self.topics.reviews, payloads.encode(message.to_dict()), 1, False, EVENT))
        return True

    def publish_review_alerts(self, camera_id: str, count: int, ts: Optional[float] = None) -> bool:
        """Retained ``R/cameras/<id>/review/alerts`` ``{"count", "ts"}``: alerts not reviewed (QoS 1)."""
        return self._outbox.enqueue_json(lambda: self.topics.camera_review_alerts(camera_id),
                                         lambda: payloads.review_alerts_payload(count, ts), retain=True)

    def publish_object_count(self, camera_id: str, label: str, count: int, ts: Optional[float] = None,
                             model: str = "default") -> bool:
        """Retained ``R/cameras/<id>/objects/<label>`` ``{"count", "ts", "model"}`` (QoS 1)."""
        return self._outbox.enqueue_json(lambda: self.topics.camera_objects(camera_id, label),
                                  lambda: payloads.count_payload(count, ts, model), retain=True)

    def publish_zone_count(self, zone: str, label: str, count: int, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        """Retained ``R/zones/<zone>/<label>`` ``{"count", "ts", "model"}`` (QoS 1)."""
        return self._outbox.enqueue_json(lambda: self.topics.zone_objects(zone, label),
                                  lambda: payloads.count_payload(count, ts, model), retain=True)

    def publish_zone_stats(self, zone: str, stats: "ZoneStats", ts: Optional[float] = None,
                           model: str = "default") -> bool:
        """Retained ``R/zones/<zone>``: occupancy, mean dwell, loitering, occupancy alert (QoS 1)."""
        return self._outbox.enqueue_json(lambda: self.topics.zone(zone),
                                         lambda: payloads.zone_stats_payload(stats, ts, model), retain=True)

    def publish_line_count(self, camera_id: str, line: str, count_in: int, count_out: int, ts: Optional[float] = None,
                           model: str = "default") -> bool:
        """Retained ``R/cameras/<id>/lines/<line>`` ``{"in", "out", "ts", "model"}`` (QoS 1)."""
        return self._outbox.enqueue_json(lambda: self.topics.camera_line(camera_id, line),
                                  lambda: payloads.line_count_payload(count_in, count_out, ts, model), retain=True)

    def publish_line_crossing(self, camera_id: str, line: str, event_id: Optional[str], track_id: int, label: str,
                              direction: str, ts: Optional[float] = None, model: str = "default",
                              speed: Optional[SpeedReading] = None) -> bool:
        """``R/cameras/<id>/lines/<line>/crossing`` (QoS 1, not retained); ``speed``: the line pair's
        measurement this crossing completed."""
        if not self._outbox.enabled:
            return False
        body = payloads.line_crossing_payload(event_id, track_id, label, direction, ts, model, speed)
        self._outbox.enqueue_event(Message(self.topics.camera_line_crossing(camera_id, line), payloads.encode(body), 1,
                                           False, EVENT))
        return True

    def publish_snapshot(self, camera_id: str, label: str, jpeg: bytes) -> bool:
        """Retained raw JPEG on ``R/cameras/<id>/<label>/snapshot`` (QoS 1)."""
        if not self._outbox.enabled:
            return False
        self._outbox.enqueue_latest(Message(self.topics.camera_label_snapshot(camera_id, label), bytes(jpeg), 1, True, EVENTS))
        return True

    def publish_health(self, body: Dict[str, Any]) -> bool:
        """Retained compact ``R/health`` (QoS 1); while offline only the latest is kept, then sent."""
        return self._outbox.enqueue_json(lambda: self.topics.health, lambda: body, retain=True)

    def publish_detect_state(self, camera_id: str, enabled: bool) -> bool:
        """Retained ``ON``/``OFF`` on ``R/cameras/<id>/detect/state`` (QoS 1); re-published after every reconnect."""
        if not self._outbox.enabled:
            return False
        msg = Message(self.topics.camera_detect_state(camera_id), payloads.detect_state_payload(enabled), 1, True, STATE)
        self._outbox.keep_state("detect", camera_id, msg)
        return True

    def publish_motion(self, camera_id: str, motion: bool) -> bool:
        """Retained ``ON``/``OFF`` on ``R/cameras/<id>/motion`` (QoS 1); while offline only the latest is kept."""
        if not self._outbox.enabled:
            return False
        self._outbox.enqueue_latest(Message(self.topics.camera_motion(camera_id), payloads.motion_payload(motion), 1, True, EVENTS))
        return True

    def on_detect_set(self, handler: DetectSetHandler, camera_known: Optional[Callable[[str], bool]] = None) -> None:
        """Call ``handler(camera_id, enabled)`` for each valid ``R/cameras/<id>/detect/set`` command.

        ``camera_known(camera_id)`` says whether a camera exists (commands for others are
        ignored). The handler runs on paho's network thread: it must not block for long. Call
        before or after :meth:`start`; the subscription follows every (re)connect.
        """
        commands = DetectSetCommands(self.topics, handler, camera_known)
        with self._lock:
            self._commands = commands
        self._outbox.subscribe([(commands.subscription, 1)])

    @property
    def commands_subscribed(self) -> bool:
        """True while the broker has acknowledged the ``detect/set`` subscription of this connection."""
        return self._outbox.subscribed

    @property
    def ignored_commands(self) -> int:
        """``detect/set`` messages ignored so far (unknown camera, bad payload)."""
        commands = self._commands
        return 0 if commands is None else commands.ignored

    def handle(self, topic: str, payload: bytes, retained: bool = False) -> bool:
        """Offered every inbound message after the others: hands it to the ``detect/set`` commands."""
        commands = self._commands
        if commands is not None:
            commands.handle(topic, payload, retained)
        return True

    def connect_subscriptions(self) -> List[Tuple[str, int]]:
        with self._lock:
            commands = self._commands
        return [(commands.subscription, 1)] if commands is not None else []
