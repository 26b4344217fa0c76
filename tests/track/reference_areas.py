"""The per-track zone and line logic as it was before it worked on whole arrays: a reference
model the array versions must agree with, change for change, on random walks. With frame times
it also settles a zone change over ``min_span_s`` and gives each change its ``at_s`` and each
crossing its interpolated ``over_s``, one track at a time."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.track.geometry import points_in_polygon
from edge_app.track.lines import Line, LineCrossing
from edge_app.track.zones import DEFAULT_MIN_FRAMES, DEFAULT_MIN_SPAN_S, Zone, ZoneChange
from edge_app.track.lines import DEFAULT_BAND


@dataclass
class _Presence:
    label: str
    inside: bool = False
    streak: int = 0            # consecutive observations that disagree with ``inside``
    since_s: Optional[float] = None  # frame time of the first of them


@dataclass
class ReferenceZoneTracker:
    """Zone membership of the tracks of one camera; ``update`` once per analysed frame.

    Pass ``Tracker.removed_ids`` to :meth:`forget` after every update: ended tracks leave their
    zones then, and their state goes.
    """

    zones: Sequence[Zone]
    min_frames: int = DEFAULT_MIN_FRAMES
    min_span_s: float = DEFAULT_MIN_SPAN_S
    _state: Dict[Tuple[str, int], _Presence] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.min_frames < 1:
            raise ValueError("min_frames must be >= 1")
        names = [z.name for z in self.zones]
        if len(set(names)) != len(names):
            raise ValueError("zone names must be unique")

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray,
               ts_s: Optional[float] = None) -> List[ZoneChange]:
        """Feed the tracked objects of one frame; returns the zone entries and exits they made.

        ``points`` are the ``(N, 2)`` normalised reference points; ids below 0 (untracked) are
        skipped. A track absent from a frame keeps its state: use :meth:`forget` when it ends.
        """
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(labels) != ids.shape[0] or points.shape[0] != ids.shape[0]:
            raise ValueError("track_ids, labels and points must have the same length")
        changes: List[ZoneChange] = []
        tracked = ids >= 0
        for zone in self.zones:
            inside = points_in_polygon(points, zone.polygon)
            for i in np.flatnonzero(tracked):
                label = labels[i]
                if not zone.counts(label):
                    continue
                change = self._observe(zone.name, int(ids[i]), label, bool(inside[i]), ts_s)
                if change is not None:
                    changes.append(change)
        return changes

    def _observe(self, zone: str, track_id: int, label: str, inside: bool, ts_s: Optional[float]):
        key = (zone, track_id)
        state = self._state.get(key)
        if state is None:
            if not inside:
                return None  # nothing to remember about a track outside a zone it was never in
            state = self._state[key] = _Presence(label)
        if inside == state.inside:
            state.streak = 0
            return None
        state.streak += 1
        if state.streak == 1:
            state.since_s = ts_s
        spanned = (state.streak >= 2 and ts_s is not None and state.since_s is not None
                   and ts_s - state.since_s >= self.min_span_s)
        if state.streak < self.min_frames and not spanned:
            return None
        state.inside, state.streak = inside, 0
        if not inside:
            del self._state[key]
        return ZoneChange(zone, track_id, state.label, "enter" if inside else "leave", state.since_s)

    def forget(self, track_ids: Iterable[int]) -> List[ZoneChange]:
        """Tracks that ended: they leave every zone they were in."""
        gone = set(int(t) for t in track_ids)
        changes = []
        for (zone, track_id), state in list(self._state.items()):
            if track_id in gone:
                if state.inside:
                    changes.append(ZoneChange(zone, track_id, state.label, "leave"))
                del self._state[(zone, track_id)]
        return changes

    def occupants(self) -> Dict[str, Dict[str, int]]:
        """Objects per zone and label now: ``{zone: {label: count}}``, zones without any left out."""
        counts: Dict[str, Dict[str, int]] = {}
        for (zone, _), state in self._state.items():
            if state.inside:
                per_label = counts.setdefault(zone, {})
                per_label[state.label] = per_label.get(state.label, 0) + 1
        return counts


@dataclass
class _Passage:
    label: str
    side: int = 0                             # -1 or +1 once clearly on a side, 0 before
    last_point: Optional[np.ndarray] = None
    last_s: float = 0.0
    crossed_at: Optional[float] = None        # position along the line of the latest pass over it
    last_ts: Optional[float] = None           # frame time of the latest observation
    crossed_ts: Optional[float] = None        # when the latest pass over it was, interpolated


@dataclass
class ReferenceLineCounter:
    """Crossings of the tracks of one camera; ``update`` once per analysed frame.

    State is kept per track and line until :meth:`forget`: pass it ``Tracker.removed_ids``
    after every update, or it grows with every track ever seen.
    """

    lines: Sequence[Line]
    band: float = DEFAULT_BAND
    _state: Dict[Tuple[str, int], _Passage] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.band < 1:
            raise ValueError("band must be in [0, 1)")
        names = [line.name for line in self.lines]
        if len(set(names)) != len(names):
            raise ValueError("line names must be unique")

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray,
               ts: Optional[float] = None) -> List[LineCrossing]:
        """Feed the tracked objects of one frame (normalised reference points, ``ts`` its capture
        time); returns new crossings."""
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(labels) != ids.shape[0] or points.shape[0] != ids.shape[0]:
            raise ValueError("track_ids, labels and points must have the same length")
        crossings: List[LineCrossing] = []
        for line in self.lines:
            s = line.signed(points)
            clear = np.abs(s) >= self.band * line.length
            for i in np.flatnonzero(ids >= 0):
                if line.counts(labels[i]):
                    crossing = self._observe(line, int(ids[i]), labels[i], points[i], float(s[i]), bool(clear[i]), ts)
                    if crossing is not None:
                        crossings.append(crossing)
        return crossings

    def _observe(self, line: Line, track_id: int, label: str, point: np.ndarray, s: float, clear: bool,
                 ts: Optional[float]) -> Optional[LineCrossing]:
        state = self._state.setdefault((line.name, track_id), _Passage(label))
        if state.last_point is not None and (state.last_s > 0) != (s > 0):
            # Where the step from the last point to this one passes over the (infinite) line.
            frac = state.last_s / (state.last_s - s)
            state.crossed_at = line.position_along(state.last_point + frac * (point - state.last_point))
            state.crossed_ts = (None if ts is None or state.last_ts is None
                                else state.last_ts + frac * (ts - state.last_ts))
        state.last_point, state.last_s, state.last_ts = point, s, ts
        if not clear:
            return None
        side = 1 if s > 0 else -1
        previous, state.side = state.side, side
        crossed_at, state.crossed_at = state.crossed_at, None
        crossed_ts, state.crossed_ts = state.crossed_ts, None
        if previous == 0 or previous == side or crossed_at is None or not 0.0 <= crossed_at <= 1.0:
            return None
        return LineCrossing(line.name, track_id, state.label, "in" if side > 0 else "out", crossed_ts)

    def forget(self, track_ids: Iterable[int]) -> None:
        """Drop the state of tracks that ended."""
        gone = set(int(t) for t in track_ids)
        for key in [k for k in self._state if k[1] in gone]:
            del self._state[key]
