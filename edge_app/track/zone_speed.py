"""Speed of objects passing through a zone of known length (docs/analytics.md, "Speed").

A zone with a ``speed`` section (``cameras[].zones[].speed``) is ``distance_m`` long along the path
objects travel through it. An object that comes in from outside and leaves again travelled that far
between the moment its reference point passed over the zone's border on the way in and the moment
it passed over it on the way out; both are interpolated between the two frames either side of the
border on the camera's capture-time line, like the crossings of a line pair.

Whether an object is in the zone is the zone tracker's call (``ZoneChange``, with its hysteresis):
the reading is made when it reports the object gone. The way in is the first passage inwards since
the object was last outside the zone by that call (a box wobbling on the border while it comes in
moves nothing), the way out the last passage outwards; so wobbling on the border lengthens the time
by at most the wobble. An object first seen inside, or whose track ends inside, has no reading:
one of its two times is unknown.

Pure: no clock, no I/O; state is kept per zone and track until :meth:`ZoneSpeedMeter.forget`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.track.geometry import points_in_polygon, polygon_edges
from edge_app.track.speed import SpeedReading, speed_kmh
from edge_app.track.zones import ZoneChange


@dataclass(frozen=True)
class SpeedZone:
    """A zone ``name`` of polygon ``polygon`` that is ``distance_m`` long along the objects' path."""

    name: str
    polygon: Tuple[Tuple[float, float], ...]
    distance_m: float
    max_kmh: Optional[float] = None
    unit: str = "kmh"

    def __post_init__(self) -> None:
        if len(self.polygon) < 3 or not self.distance_m > 0:
            raise ValueError(f"speed zone {self.name!r} needs 3 points or more and distance_m > 0")

    @classmethod
    def from_config(cls, zone) -> Optional["SpeedZone"]:
        """From a ``cameras[].zones`` entry (``ZoneConfig``); None when it has no speed section."""
        speed = zone.speed
        if speed is None:
            return None
        return cls(zone.name, tuple((float(x), float(y)) for x, y in zone.polygon), float(speed.distance_m),
                   speed.max_kmh, speed.unit)


def border_passage(edges: np.ndarray, start: np.ndarray, end: np.ndarray, first: bool) -> Optional[float]:
    """Where (0 at ``start``, 1 at ``end``) the step between them passes over the polygon's border:
    the first passage (``first``) or the last; None when it passes over none."""
    x1, y1, x2, y2 = edges
    dx, dy = end[0] - start[0], end[1] - start[1]
    ex, ey = x2 - x1, y2 - y1
    denominator = dx * ey - dy * ex
    with np.errstate(divide="ignore", invalid="ignore"):
        t = ((x1 - start[0]) * ey - (y1 - start[1]) * ex) / denominator
        u = ((x1 - start[0]) * dy - (y1 - start[1]) * dx) / denominator
    hits = t[(denominator != 0) & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)]
    if not len(hits):
        return None
    return float(hits.min() if first else hits.max())


@dataclass
class _Passage:
    point: np.ndarray
    ts: float
    inside: bool
    entered_s: Optional[float] = None
    left_s: Optional[float] = None
    member: bool = False       # in the zone by the zone tracker's call


@dataclass
class ZoneSpeedMeter:
    """Speeds through the speed zones of one camera: :meth:`update` with each frame's tracked
    objects, then :meth:`readings` with the frame's zone changes; :meth:`forget` ended tracks."""

    zones: Sequence[SpeedZone]
    _edges: Dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _state: Dict[Tuple[str, int], _Passage] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._edges = {zone.name: polygon_edges(zone.polygon) for zone in self.zones}

    def __len__(self) -> int:
        return len(self._state)

    def update(self, track_ids: Sequence[int], points: np.ndarray, ts: Optional[float]) -> None:
        """Feed one frame's tracked objects (``-1``: untracked, ignored) and its capture time."""
        if not self.zones or ts is None:
            return
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        tracked = np.flatnonzero(ids >= 0)
        if not len(tracked):
            return
        for zone in self.zones:
            edges = self._edges[zone.name]
            inside = points_in_polygon(points[tracked], zone.polygon, edges)
            for row, now_inside in zip(tracked.tolist(), inside.tolist()):
                self._observe(zone.name, edges, int(ids[row]), points[row], float(ts), bool(now_inside))

    def _observe(self, zone: str, edges: np.ndarray, track_id: int, point: np.ndarray, ts: float, inside: bool) -> None:
        state = self._state.get((zone, track_id))
        if state is None:
            self._state[(zone, track_id)] = _Passage(point.copy(), ts, inside)
            return
        if inside != state.inside and ts > state.ts:
            # The border was passed in this step: going in, the last passage counts (the object is
            # inside after it); going out, the first.
            t = border_passage(edges, state.point, point, first=not inside)
            at_s = state.ts + (ts - state.ts) * (0.5 if t is None else t)
            if inside:
                if not state.member:
                    state.entered_s = at_s  # a new way in; while a member, only wobble on the way out
                state.left_s = None
            elif state.entered_s is not None:
                state.left_s = at_s
        state.point, state.ts, state.inside = point.copy(), ts, inside

    def readings(self, changes: Iterable[ZoneChange]) -> List[SpeedReading]:
        """Take the frame's zone changes (after :meth:`update`); readings of the objects the zone
        tracker reports gone from a speed zone now."""
        by_name = {zone.name: zone for zone in self.zones}
        out: List[SpeedReading] = []
        for change in changes:
            zone = by_name.get(change.zone)
            state = self._state.get((change.zone, change.track_id))
            if zone is None or state is None:
                continue
            if change.change == "enter":
                state.member = True
                continue
            if state.entered_s is not None and state.left_s is not None:
                kmh = speed_kmh(zone.distance_m, state.entered_s, state.left_s)
                if kmh is not None:
                    out.append(SpeedReading(zone.name, zone.name, zone.name, change.track_id, change.label, kmh,
                                            zone.unit, zone.max_kmh))
            state.entered_s, state.left_s, state.member = None, None, False
        return out

    def forget(self, track_ids: Iterable[int]) -> None:
        gone = set(int(t) for t in track_ids)
        if gone:
            self._state = {key: value for key, value in self._state.items() if key[1] not in gone}
