"""From a camera's events to its review items: one pure function (docs/notifications.md).

Events sorted by start time form one item while each starts no later than ``gap_s`` after the
latest end of the events before it in the item (overlapping events always join). An event still
open (no ``end_time``) keeps its item open: whatever starts after it joins.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Sequence

from edge_app.events.model import Event
from edge_app.review.model import AlertRule, ReviewItem, severity_of


def _unique(values: Iterable[str]) -> tuple:
    return tuple(dict.fromkeys(values))


def make_item(events: Sequence[Event], rule: AlertRule, reviewed: bool = False) -> ReviewItem:
    """The review item of ``events`` (one camera, sorted by start time, at least one)."""
    ends = [event.end_time for event in events]
    return ReviewItem(
        id=events[0].id, camera_id=events[0].camera_id, start_time=events[0].start_time,
        end_time=None if any(end is None for end in ends) else max(ends),
        labels=_unique(event.label for event in events),
        zones=_unique(zone for event in events for zone in event.entered_zones),
        event_ids=tuple(event.id for event in events), severity=severity_of(events, rule), reviewed=reviewed)


def _joins(event: Event, latest_end: Optional[float], gap_s: float) -> bool:
    """Whether ``event`` belongs to the item whose events end at ``latest_end`` (None: one is open)."""
    return latest_end is None or event.start_time <= latest_end + gap_s


def group_events(events: Iterable[Event], gap_s: float, rule: AlertRule) -> List[ReviewItem]:
    """The review items of one camera's ``events``, oldest first.

    Raises ValueError for events of more than one camera: items never span cameras, and a caller
    holding several cameras' events groups each with its own rule (:func:`group_by_camera`).
    """
    if gap_s < 0:
        raise ValueError("gap_s must be >= 0")
    ordered = sorted(events, key=lambda event: (event.start_time, event.id))
    if len({event.camera_id for event in ordered}) > 1:
        raise ValueError("group_events takes the events of one camera; use group_by_camera")
    items: List[ReviewItem] = []
    current: List[Event] = []
    latest_end: Optional[float] = None
    for event in ordered:
        if current and not _joins(event, latest_end, gap_s):
            items.append(make_item(current, rule))
            current = []
        if not current:
            latest_end = event.end_time
        elif latest_end is not None:
            latest_end = None if event.end_time is None else max(latest_end, event.end_time)
        current.append(event)
    if current:
        items.append(make_item(current, rule))
    return items


def group_by_camera(events: Iterable[Event], gap_s: float,
                    rule_of: Callable[[str], AlertRule]) -> Dict[str, List[ReviewItem]]:
    """Each camera's review items, grouped with that camera's rule."""
    by_camera: Dict[str, List[Event]] = {}
    for event in events:
        by_camera.setdefault(event.camera_id, []).append(event)
    return {camera_id: group_events(camera_events, gap_s, rule_of(camera_id))
            for camera_id, camera_events in by_camera.items()}
