"""What a client may ask of the stored review items, and the typed page it gets (docs/review.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from edge_app.events.model import Event
from edge_app.review.model import ReviewItem

PAGE_SIZE = 50
#: pages a client may ask for: 50 x 100,000 items is more than a year of a busy camera
MAX_PAGE = 100_000
#: events of one item listed in an answer (``event_count`` says how many it has)
MAX_EVENTS_LISTED = 100


@dataclass(frozen=True)
class ReviewQuery:
    """Filters of ``GET /api/v1/review``; None means no filter. Newest (by start time) first."""

    camera: Optional[str] = None
    label: Optional[str] = None  # one of the item's events has this label
    zone: Optional[str] = None  # one of the item's events entered this zone
    severity: Optional[str] = None  # "alert" or "detection"
    reviewed: Optional[bool] = None
    after: Optional[float] = None  # the item starts at or after this, Unix seconds (a day's midnight)
    before: Optional[float] = None  # the item starts before this
    page: int = 1  # from 1, PAGE_SIZE items each

    @property
    def offset(self) -> int:
        return (max(1, min(MAX_PAGE, int(self.page))) - 1) * PAGE_SIZE


@dataclass(frozen=True)
class ReviewEntry:
    """One review item of a page with the events it lists (at most MAX_EVENTS_LISTED, oldest first)."""

    item: ReviewItem
    events: Tuple[Event, ...]

    def to_dict(self) -> Dict[str, Any]:
        item = self.item
        return {
            "id": item.id, "camera_id": item.camera_id, "severity": item.severity, "reviewed": item.reviewed,
            "start_time": item.start_time, "end_time": item.end_time,
            "duration_s": None if item.duration_s is None else round(item.duration_s, 3),
            "labels": list(item.labels), "zones": list(item.zones), "event_count": len(item.event_ids),
            "events": [{"id": e.id, "type": e.type, "label": e.label, "start_time": e.start_time, "end_time": e.end_time,
                        "top_score": e.top_score, "has_snapshot": e.has_snapshot, "has_clip": e.has_clip}
                       for e in self.events[:MAX_EVENTS_LISTED]],
        }


@dataclass(frozen=True)
class ReviewPage:
    """The body of ``GET /api/v1/review``."""

    items: Tuple[ReviewEntry, ...]
    total: int  # items matching the filters, on every page
    page: int
    page_size: int = PAGE_SIZE

    @property
    def pages(self) -> int:
        return (self.total + self.page_size - 1) // self.page_size

    def to_dict(self) -> Dict[str, Any]:
        return {"items": [entry.to_dict() for entry in self.items], "total": self.total, "page": self.page,
                "pages": self.pages, "page_size": self.page_size}
