"""``R/reviews`` messages from ``R/events`` messages: a review item's ``new``, ``update`` and ``end``.

Fed every event message in the order it went out (the analysis thread), like
:class:`edge_app.review.live.LiveReview`, and grouped by the same rule as the stored items
(``grouping``), so an item on MQTT has the id it has in ``GET /api/v1/review``:

- ``new``: an event starts an item (the camera's previous item has ended);
- ``update``: what the item says changed: an event joined, a zone was entered, it became an alert, or
  an event joined within ``review.gap_s`` after its end (an event ending while others go on changes nothing);
- ``end``: every event of the item has ended. An event that follows within the gap joins it again
  (an ``update`` with ``end_time`` null, then another ``end``).

An event's own updates (its box, its score) change no item and send nothing. An item is named by
its earliest event (start time, then id), like the stored ones: an event confirmed later that
started earlier (or at the same moment, with a smaller id) renames it, and that ``update`` has the
old id in ``before`` and the new one in ``after``. Pure: no clock, no I/O; memory is one item per
camera, its events capped as in ``live``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Optional

from edge_app.events.model import END, NEW, UPDATE, EventMessage
from edge_app.review.grouping import make_item
from edge_app.review.live import OpenItem
from edge_app.review.model import AlertRule, ReviewItem


def item_dict(item: ReviewItem) -> Dict[str, Any]:
    """A review item as ``R/reviews`` carries it (the REST answer adds ``reviewed`` and its events)."""
    return {"id": item.id, "camera_id": item.camera_id, "severity": item.severity, "start_time": item.start_time,
            "end_time": item.end_time, "duration_s": _rounded(item.duration_s), "labels": list(item.labels),
            "zones": list(item.zones), "event_ids": list(item.event_ids)}


def _rounded(duration_s: Optional[float]) -> Optional[float]:
    return None if duration_s is None else round(duration_s, 3)  # milliseconds; not a float's last digits


@dataclass(frozen=True)
class ReviewMessage:
    type: str  # NEW, UPDATE or END
    before: Optional[ReviewItem]  # None for NEW
    after: ReviewItem

    def to_dict(self) -> Dict[str, Any]:
        return {"type": self.type, "before": None if self.before is None else item_dict(self.before),
                "after": item_dict(self.after)}


class ReviewFeed:
    """One per appliance; :meth:`observe` every event message in the order it went out."""

    def __init__(self, gap_s: Callable[[], float], rule_of: Callable[[str], AlertRule]) -> None:
        self._gap_s = gap_s  # read per message: the review section may change while the appliance runs
        self._rule_of = rule_of
        self._items: Dict[str, OpenItem] = {}
        self._last: Dict[str, ReviewItem] = {}  # per camera, the item as last sent
        self._first: Dict[str, tuple] = {}  # per camera, (start time, id) of its item's earliest event

    def observe(self, message: EventMessage) -> Optional[ReviewMessage]:
        event = message.after
        camera_id = event.camera_id
        item = self._items.get(camera_id)
        fresh = item is None or (event.id not in item.events and not self._joins(item, event))
        if fresh:
            item = self._items[camera_id] = OpenItem()
            self._last.pop(camera_id, None)
            self._first[camera_id] = (event.start_time, event.id)
        # The item is named by its earliest event (start time, then id), as the stored items are,
        # also once the cap has let that event go from memory.
        self._first[camera_id] = min(self._first[camera_id], (event.start_time, event.id))
        item.keep(event)
        events = sorted(item.events.values(), key=lambda kept: (kept.start_time, kept.id))
        first_start, first_id = self._first[camera_id]
        now = replace(make_item(events, self._rule_of(camera_id)), id=first_id, start_time=first_start)
        before = self._last.get(camera_id)
        if before is not None and _summary(before) == _summary(now):
            return None
        self._last[camera_id] = now
        if before is None:
            return ReviewMessage(NEW, None, now)
        ended = now.end_time is not None and item.latest_end() is not None
        return ReviewMessage(END if ended else UPDATE, before, now)

    def forget(self, camera_id: str) -> None:
        self._items.pop(camera_id, None)
        self._last.pop(camera_id, None)
        self._first.pop(camera_id, None)

    def _joins(self, item: OpenItem, event) -> bool:
        latest_end = item.latest_end()
        return latest_end is None or event.start_time <= latest_end + self._gap_s()


def _summary(item: ReviewItem) -> tuple:
    return (item.severity, item.end_time, item.labels, item.zones, item.event_ids)
