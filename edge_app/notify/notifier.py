"""From event messages to notifications: the one hook the appliance calls (docs/notifications.md).

:meth:`Notifier.on_event` runs on the analysis thread for every ``R/events`` message. It feeds the
live review grouping; when an alert starts it checks each target's cameras, quiet hours and
cooldown and queues the notification on the target's own thread. It never waits for a receiver
and never raises: a broken target must not stop analysis.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, List, Optional, Tuple

from edge_app.config.schema_notify import NotificationsConfig
from edge_app.events.model import EventMessage
from edge_app.notify.clip_links import ClipLinks
from edge_app.notify.message import HttpRequest, Notification, links
from edge_app.notify.schedule import Cooldown, in_quiet_hours
from edge_app.notify.transport import send
from edge_app.notify.worker import TargetStatus, TargetWorker
from edge_app.review.live import AlertStart, LiveReview

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NotifierStatus:
    """Deliveries of each ``notifications.targets`` entry (``status.notifications``; docs/notifications.md)."""

    targets: Tuple[TargetStatus, ...]


def _local_minute() -> int:
    now = datetime.now()  # the appliance's local time zone (TZ, /etc/localtime)
    return now.hour * 60 + now.minute


class Notifier:
    def __init__(self, config: NotificationsConfig, device_id: str, review: LiveReview, *,
                 snapshot_of: Callable[[str], Optional[bytes]] = lambda _event_id: None,
                 transport: Callable[[HttpRequest, float], int] = send,
                 monotonic: Callable[[], float] = time.monotonic,
                 local_minute: Callable[[], int] = _local_minute,
                 clock: Callable[[], float] = time.time,
                 clip_links: Optional[ClipLinks] = None) -> None:
        self._config = config
        # With the device's link key the clip link is signed and works without the API token.
        self._clip_links = clip_links
        self._clock = clock
        self._device_id = device_id
        self._review = review
        self._monotonic = monotonic
        self._local_minute = local_minute
        self._cooldown = Cooldown()
        self._workers: List[TargetWorker] = [TargetWorker(target, snapshot_of, transport, clock)
                                             for target in config.targets]

    @property
    def enabled(self) -> bool:
        return bool(self._workers)

    def start(self) -> None:
        for worker in self._workers:
            worker.start()

    def stop(self, timeout_s: float = 0.5) -> None:
        """Every target stops waiting and retrying; a request in flight ends by its own timeout
        (the threads are daemons: a hanging receiver never holds up the appliance's exit)."""
        for worker in self._workers:
            worker.stop(timeout_s=0)
        deadline = time.monotonic() + timeout_s
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))

    def status(self) -> NotifierStatus:
        return NotifierStatus(tuple(worker.status() for worker in self._workers))

    def on_event(self, message: EventMessage) -> EventMessage:
        """Chainable with the other event hooks: ``message`` is returned as it came."""
        if not self._workers:
            return message
        try:
            start = self._review.observe(message)
            if start is not None:
                self._alert(start)
        except Exception:  # never let a notification problem reach the analysis thread
            log.exception("notifications: handling an event of camera %s failed", message.after.camera_id)
        return message

    def _alert(self, start: AlertStart) -> None:
        event = start.event
        snapshot_url, clip_url = links(self._config.base_url, event.id)
        if self._config.base_url and self._clip_links is not None:
            clip_url = self._clip_links.link(self._config.base_url, event.id, self._config.link_ttl_s,
                                             now_s=self._clock()).url
        notification = Notification(
            device_id=self._device_id, camera_id=event.camera_id, label=event.label, zones=tuple(event.entered_zones),
            event_id=event.id, review_id=start.item.id, start_time=event.start_time, score=event.top_score,
            snapshot_url=snapshot_url, clip_url=clip_url, event_type=event.type, occupancy=event.occupancy)
        now_s, minute = self._monotonic(), self._local_minute()
        for worker in self._workers:
            target = worker.target
            if target.cameras and event.camera_id not in target.cameras:
                continue
            if in_quiet_hours(target.quiet_hours, minute):
                worker.count("suppressed_quiet")
                continue
            if not self._cooldown.allows(target.name, event.camera_id, target.cooldown_s, now_s):
                worker.count("suppressed_cooldown")
                continue
            self._cooldown.sent(target.name, event.camera_id, now_s)
            worker.submit(notification)
