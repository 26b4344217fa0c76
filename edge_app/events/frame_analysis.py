"""What a camera's analysis gives back: a frame's changes (``FrameAnalysis``), its crossings, and
every count now (``CountsSnapshot``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from edge_app.detect.detections import Detections
from edge_app.events.counts import LineTotals
from edge_app.events.model import EventMessage, Snapshot
from edge_app.events.tracks import EventTrack
from edge_app.events.zone_stats import ZoneStats
from edge_app.track import SpeedReading


@dataclass(frozen=True)
class Crossing:
    """One tripwire crossing: ``R/cameras/<id>/lines/<line>/crossing``."""

    line: str
    track_id: int
    label: str
    direction: str            # "in" or "out"
    event_id: Optional[str]   # None when the object is not an event (yet, or not of an event label)
    ts: float
    speed: Optional[SpeedReading] = None  # the crossing completed a line pair's passage


@dataclass(frozen=True)
class FrameAnalysis:
    """What one frame changed. Counts are only those that changed in this frame."""

    camera_id: str
    frame_id: int
    ts: float
    detections: Detections                                    # with ``track_id`` (-1: no track yet)
    events: List[EventMessage] = field(default_factory=list)  # R/events, in order
    snapshots: List[Snapshot] = field(default_factory=list)   # to store with their events
    # label -> snapshot for the retained R/cameras/<id>/<label>/snapshot: only those of the
    # latest event of each label, so an older event's better picture never replaces a newer one
    label_snapshots: Dict[str, Snapshot] = field(default_factory=dict)
    object_counts: Dict[str, int] = field(default_factory=dict)            # label -> in view now
    zone_counts: Dict[Tuple[str, str], int] = field(default_factory=dict)  # (zone, label) -> in zone now
    crossings: List[Crossing] = field(default_factory=list)
    tracks: List[EventTrack] = field(default_factory=list)  # of the events that ended, to store with them
    line_counts: Dict[str, LineTotals] = field(default_factory=dict)       # line -> totals, lines crossed now
    zone_stats: Dict[str, ZoneStats] = field(default_factory=dict)         # zone -> its figures, changed now
    model: str = "default"  # the camera's model (cameras[].model): counts and crossings carry its name


@dataclass(frozen=True)
class CountsSnapshot:
    """Every count of one camera now; labels seen since start included at 0."""

    objects: Dict[str, int]
    zones: Dict[str, Dict[str, int]]
    lines: Dict[str, LineTotals]
    zone_stats: Dict[str, ZoneStats] = field(default_factory=dict)
