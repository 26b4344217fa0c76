"""Where a camera's tracks are: its tracker, zones and lines as one unit that a frame passes through.

The zone tests and tripwire crossings of a frame depend on the frame's track ids and on nothing
the rest of the analysis holds, so they travel with the tracker: in the appliance's process, or
in the tracker's child process (``edge_app.track.processes``), where they cost the appliance's
interpreter lock nothing. Either way the same :class:`CameraPlacement` does the same work in the
same order, so the zone changes and crossings are those of one place as of the other.

What crosses the pipe is plain tuples (:func:`pack_placed` / :func:`unpack_placed`): they
pickle several times faster than dataclasses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.track.geometry import reference_points
from edge_app.track.lines import Line, LineCounter, LineCrossing
from edge_app.track.tracker import Tracker
from edge_app.track.zones import Zone, ZoneChange, ZoneTracker

Occupants = Dict[str, Dict[str, int]]


@dataclass(frozen=True)
class Areas:
    """The zones and lines of one camera, as the tracker's side needs them."""

    zones: Tuple[Zone, ...] = ()
    lines: Tuple[Line, ...] = ()


@dataclass(frozen=True)
class Placed:
    """What a frame (or an ageing without one) changed in the camera's zones and on its lines.

    ``occupants`` is None when nobody entered or left a zone: the last one given still holds."""

    zone_changes: List[ZoneChange]
    crossings: List[LineCrossing]
    occupants: Optional[Occupants]


@runtime_checkable
class PlacingTracker(Protocol):
    """A tracker that places its frames in zones and lines itself (``RemoteTracker``: in its child)."""

    def place_with(self, areas: Areas) -> None: ...

    def update_placed(self, detections: Detections, timestamp_s: float,
                      frame_size: Tuple[int, int]) -> Tuple[np.ndarray, Placed]: ...

    def expire_placed(self, now_s: float) -> Placed: ...


class CameraPlacement:
    """The zones and lines of one camera's tracks; fed after every tracker update or expiry."""

    def __init__(self, areas: Areas = Areas()) -> None:
        self.zones = ZoneTracker(list(areas.zones))
        self.lines = LineCounter(list(areas.lines))

    def place(self, ids: np.ndarray, labels: np.ndarray, points: np.ndarray, ts: float,
              removed: Sequence[int]) -> Placed:
        """The objects of a frame, then the tracks that ended with it (they leave their zones)."""
        zone_changes = self.zones.update(ids, labels, points, ts) + self.zones.forget(removed)
        crossings = self.lines.update(ids, labels, points, ts)
        self.lines.forget(removed)
        return Placed(zone_changes, crossings, self.zones.occupants() if zone_changes else None)

    def forget(self, ids: Sequence[int]) -> None:
        """Tracks dropped without a frame (the analysis ended): no changes, nothing remembered."""
        self.zones.forget(ids)
        self.lines.forget(ids)


def track_and_place(tracker: Tracker, placement: CameraPlacement, detections: Detections, ts: float,
                    frame_size: Tuple[int, int]) -> Tuple[np.ndarray, Placed]:
    """One frame through the tracker, then its tracked objects through the zones and lines."""
    ids = tracker.update(detections, ts)
    width, height = frame_size
    return ids, placement.place(ids, detections.label_array(), reference_points(detections.xyxy, width, height), ts,
                                tracker.removed_ids)


def expire_and_place(tracker: Tracker, placement: CameraPlacement, now_s: float) -> Placed:
    """No frame for a while: the tracker ages its tracks, and those that ended leave their zones."""
    tracker.expire(now_s)
    return placement.place(np.zeros(0, np.int64), np.zeros(0, object), np.zeros((0, 2)), now_s, tracker.removed_ids)


def pack_placed(placed: Placed) -> tuple:
    return ([(c.zone, c.track_id, c.label, c.change, c.at_s) for c in placed.zone_changes],
            [(c.line, c.track_id, c.label, c.direction, c.over_s) for c in placed.crossings],
            placed.occupants)


def unpack_placed(packed: tuple) -> Placed:
    zone_changes, crossings, occupants = packed
    return Placed([ZoneChange(*change) for change in zone_changes], [LineCrossing(*crossing) for crossing in crossings],
                  occupants)
