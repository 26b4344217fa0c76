"""Review items as events happen: which event message starts an alert.

The live counterpart of :func:`edge_app.review.grouping.group_events`, fed the ``R/events``
messages of every camera in order. An alert *starts* the first time an event of the camera's
current review item matches the alert rule: the item's first event when it matches at once, or a
later message (a zone entered in an ``update``, another event joining) when the item began as a
detection. Each item starts at most one alert.

Pure: no clock, no I/O; memory is one item per camera, its events capped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

from edge_app.events.model import Event, EventMessage
from edge_app.review.grouping import make_item
from edge_app.review.model import AlertRule, ReviewItem

#: events of one item kept at most; the oldest ended ones go first (their end time is kept)
MAX_EVENTS_PER_ITEM = 200


@dataclass(frozen=True)
class AlertStart:
    """An alert began: the review item as it stands and the event that made it one."""

    item: ReviewItem
    event: Event


@dataclass
class OpenItem:
    events: Dict[str, Event] = field(default_factory=dict)  # by id, in the order they joined
    dropped_end: Optional[float] = None  # latest end of events no longer kept
    alerted: bool = False

    def latest_end(self) -> Optional[float]:
        """None while an event is open."""
        ends = [event.end_time for event in self.events.values()]
        if any(end is None for end in ends):
            return None
        return max([end for end in ends if end is not None] + ([self.dropped_end] if self.dropped_end is not None else []))

    def keep(self, event: Event) -> None:
        self.events[event.id] = event
        while len(self.events) > MAX_EVENTS_PER_ITEM:
            oldest = next((key for key, kept in self.events.items() if kept.ended), None)
            if oldest is None:
                return
            end = self.events.pop(oldest).end_time
            self.dropped_end = end if self.dropped_end is None else max(self.dropped_end, end)


class LiveReview:
    """One per appliance; :meth:`observe` every event message in the order it went out."""

    def __init__(self, gap_s: Callable[[], float], rule_of: Callable[[str], AlertRule]) -> None:
        # Read per message: the review section may change while the appliance runs.
        self._gap_s = gap_s
        self._rule_of = rule_of
        self._items: Dict[str, OpenItem] = {}

    def observe(self, message: EventMessage) -> Optional[AlertStart]:
        event = message.after
        item = self._items.get(event.camera_id)
        if item is None or (event.id not in item.events and not self._joins(item, event)):
            item = self._items[event.camera_id] = OpenItem()
        item.keep(event)
        if item.alerted:
            return None
        rule = self._rule_of(event.camera_id)
        if not rule.matches(event):
            return None
        item.alerted = True
        events = sorted(item.events.values(), key=lambda kept: (kept.start_time, kept.id))
        return AlertStart(make_item(events, rule), event)

    def forget(self, camera_id: str) -> None:
        """The camera went away: its next event starts a new item."""
        self._items.pop(camera_id, None)

    def _joins(self, item: OpenItem, event: Event) -> bool:
        latest_end = item.latest_end()
        return latest_end is None or event.start_time <= latest_end + self._gap_s()
