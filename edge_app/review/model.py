"""The review item and the rule that makes it an alert (docs/notifications.md, "Review items and alerts").

Pure: no clock, no I/O. Times are the events' capture times in Unix seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Optional, Tuple

from edge_app.events.model import Event

ALERT, DETECTION = "alert", "detection"


@dataclass(frozen=True)
class AlertRule:
    """``review.alerts`` of one camera: an event is an alert when its label is one of ``labels`` and it
    entered one of ``zones``; an empty set matches everything."""

    labels: AbstractSet[str] = frozenset()
    zones: AbstractSet[str] = frozenset()

    @classmethod
    def of(cls, config: object) -> "AlertRule":
        """From a ``ReviewAlertsConfig`` (anything with ``labels`` and ``zones``)."""
        return cls(frozenset(config.labels), frozenset(config.zones))

    def matches(self, event: Event) -> bool:
        # A speed above its line pair's max_kmh is an alert whatever the labels and zones: the
        # limit is the owner's own rule for that place (docs/analytics.md, "Speed").
        if event.speed_alert:
            return True
        label_ok = not self.labels or event.label in self.labels
        zone_ok = not self.zones or any(zone in self.zones for zone in event.entered_zones)
        return label_ok and zone_ok


@dataclass(frozen=True)
class ReviewItem:
    """Events of one camera that overlap or follow each other within the gap."""

    id: str  # the id of its first event: stable as the item grows
    camera_id: str
    start_time: float
    end_time: Optional[float]  # None while one of its events is still open
    labels: Tuple[str, ...]  # in the order first seen
    zones: Tuple[str, ...]  # entered by any of its events, in the order first seen
    event_ids: Tuple[str, ...]  # by start time
    severity: str  # ALERT or DETECTION
    reviewed: bool = False

    @property
    def is_alert(self) -> bool:
        return self.severity == ALERT

    @property
    def duration_s(self) -> Optional[float]:
        return None if self.end_time is None else self.end_time - self.start_time


def severity_of(events, rule: AlertRule) -> str:
    """ALERT when any of ``events`` matches ``rule``, else DETECTION."""
    return ALERT if any(rule.matches(event) for event in events) else DETECTION
