"""The event object (docs/mqtt.md, "The event object"), Frigate-compatible in shape.

``Event`` is immutable: each change (a zone entered, a better score, the end) makes a new value,
so the ``before`` and ``after`` of an ``R/events`` message are simply the old and the new one.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, Mapping, Optional, Tuple

#: R/events message types
NEW, UPDATE, END = "new", "update", "end"
#: event types (``Event.type``): a tracked object, an object staying in a zone past its ``loitering_s``,
#: or a zone holding more objects than its ``max_objects``
OBJECT, LOITERING, OCCUPANCY = "object", "loitering", "occupancy"


@dataclass(frozen=True)
class Occupancy:
    """What an occupancy event says of its zone (docs/analytics.md, "Dwell and loitering")."""

    objects: Mapping[str, int]  # label -> objects of the zone's labels inside at the latest message
    peak_objects: int           # the most inside at once since the event began
    max_objects: int            # the zone's limit

    @property
    def count(self) -> int:
        return sum(self.objects.values())

    def to_dict(self) -> Dict[str, Any]:
        return {"objects": dict(self.objects), "count": self.count, "peak_objects": int(self.peak_objects),
                "max_objects": int(self.max_objects)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Occupancy":
        return cls({str(label): int(n) for label, n in (data.get("objects") or {}).items()},
                   int(data["peak_objects"]), int(data["max_objects"]))


@dataclass(frozen=True)
class Event:
    id: str  # unique across restarts: "<start time>-<camera>-<track>"
    camera_id: str
    label: str
    track_id: int
    score: float  # confidence in the latest frame
    top_score: float  # best confidence so far
    box: Tuple[float, float, float, float]  # [x1, y1, x2, y2] in source pixels, latest frame
    frame_time: float  # capture time of the latest frame, Unix seconds
    start_time: float
    end_time: Optional[float] = None
    current_zones: Tuple[str, ...] = ()
    entered_zones: Tuple[str, ...] = ()  # in the order they were first entered
    has_snapshot: bool = False
    model: str = "default"  # the name of the model that found the object (cameras[].model)
    # ``record.events``: the event has a clip (being written while it is open and post_s after its
    # end); its length so far, final in the ``update`` that follows the clip's completion.
    has_clip: bool = False
    clip_duration_s: float = 0.0
    type: str = OBJECT
    # Seconds the object has spent in each zone it entered (docs/analytics.md, "Dwell"); a
    # loitering event has its one zone.
    dwell_s: Mapping[str, float] = field(default_factory=dict)
    # The fastest speed measured on a line pair (cameras[].lines[].speed), km/h; None: none
    # measured. ``speed_alert``: a measurement was above its pair's max_kmh, which makes the
    # event's review item an alert (docs/analytics.md, "Speed").
    speed_kmh: Optional[float] = None
    speed_alert: bool = False
    # An occupancy event's count and its zone's limit; None for the other types.
    occupancy: Optional[Occupancy] = None

    @property
    def ended(self) -> bool:
        return self.end_time is not None

    def to_dict(self) -> Dict[str, Any]:
        # Every field but those replaced below is a str, number, bool or None: a shallow copy in
        # field order is what dataclasses.asdict gives, without its recursive deep copy (a fifth
        # of a millisecond an event message).
        data = {name: getattr(self, name) for name in _EVENT_FIELDS}
        data["box"] = [round(float(v), 1) for v in self.box]
        data["current_zones"] = list(self.current_zones)
        data["entered_zones"] = list(self.entered_zones)
        data["clip_duration_s"] = round(float(self.clip_duration_s), 2)
        data["dwell_s"] = {zone: round(float(s), 2) for zone, s in self.dwell_s.items()}
        data["speed_kmh"] = None if self.speed_kmh is None else round(float(self.speed_kmh), 1)
        data["occupancy"] = None if self.occupancy is None else self.occupancy.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Event":
        return cls(
            id=str(data["id"]), camera_id=str(data["camera_id"]), label=str(data["label"]),
            track_id=int(data["track_id"]), score=float(data["score"]), top_score=float(data["top_score"]),
            box=tuple(float(v) for v in data["box"]), frame_time=float(data["frame_time"]),
            start_time=float(data["start_time"]),
            end_time=None if data.get("end_time") is None else float(data["end_time"]),
            current_zones=tuple(data.get("current_zones") or ()), entered_zones=tuple(data.get("entered_zones") or ()),
            has_snapshot=bool(data.get("has_snapshot", False)), model=str(data.get("model", "default")),
            # Events written before clips existed have neither key.
            has_clip=bool(data.get("has_clip", False)), clip_duration_s=float(data.get("clip_duration_s") or 0.0),
            # Events from before dwell and loitering have neither key.
            type=str(data.get("type") or OBJECT),
            dwell_s={str(zone): float(s) for zone, s in (data.get("dwell_s") or {}).items()},
            # Events from before speeds have neither key.
            speed_kmh=None if data.get("speed_kmh") is None else float(data["speed_kmh"]),
            speed_alert=bool(data.get("speed_alert", False)),
            # Events from before occupancy events have no key.
            occupancy=None if data.get("occupancy") is None else Occupancy.from_dict(data["occupancy"]),
        )


_EVENT_FIELDS = tuple(f.name for f in fields(Event))


@dataclass(frozen=True)
class EventMessage:
    """One ``R/events`` message: ``{"type", "before", "after"}``."""

    type: str  # NEW, UPDATE or END
    after: Event
    before: Optional[Event] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"type": self.type, "before": None if self.before is None else self.before.to_dict(),
                "after": self.after.to_dict()}


@dataclass(frozen=True)
class Snapshot:
    """The best picture of an event so far: JPEG bytes, annotated with the event's box."""

    event_id: str
    camera_id: str
    label: str
    score: float
    frame_time: float
    jpeg: bytes = field(repr=False)


@dataclass(frozen=True)
class ClipRecord:
    """What the event record keeps of its clip: the file (relative to the recording directory,
    resolved only by the recording store) and its size and length as last reported."""

    event_id: str
    path: str
    size_bytes: int
    duration_s: float
    start_time: Optional[float] = None  # Unix seconds of its first frame
    end_time: Optional[float] = None  # of its last frame
