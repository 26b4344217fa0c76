"""Tripwire crossings with direction, counted once per crossing however much a box jitters.

A line runs from P1 to P2 in normalised coordinates. For a reference point (cx, cy),
s = (x2-x1)(cy-y1) - (y2-y1)(cx-x1); going from s < 0 to s > 0 is ``in``, from s > 0 to
s < 0 is ``out`` (docs/configuration.md, "Rules beyond one key"). With P1 = (0.5, 0) and P2 = (0.5, 1), walking from
the right half of the frame to the left half is ``in``.

Hysteresis: a track is on a side only once its point is at least ``band`` (normalised distance)
away from the line; points closer than that change nothing. A crossing counts when the track
reaches the far side after having been clearly on the near side, so a box wobbling on the line
counts nothing, and a track counts the same direction again only after it has moved clearly away
to the other side and come back. The crossing must pass through the segment between P1 and P2,
not the infinite line through them.

A track first seen inside the band has no side yet, whichever side of the line its point is on:
leaving the band to either side only gives it one, and it counts its first crossing when it
then reaches the other side clearly. An object that appears on the line (out of a doorway, from
behind a pillar) has not been seen crossing it; counting it would guess, and a guess from the
side nearest to the line would turn jitter in the first frames into counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, FrozenSet, Iterable, List, Literal, Optional, Sequence

import numpy as np

from edge_app.track.geometry import Point

DEFAULT_BAND = 0.02


@dataclass(frozen=True)
class Line:
    name: str
    p1: Point
    p2: Point
    labels: FrozenSet[str] = frozenset()   # empty: every label counts

    def __post_init__(self) -> None:
        if self.p1 == self.p2:
            raise ValueError(f"line {self.name!r} needs two different points")

    def counts(self, label: str) -> bool:
        return not self.labels or label in self.labels

    @classmethod
    def from_config(cls, line) -> "Line":
        """From a ``cameras[].lines`` entry of the configuration (``LineConfig``)."""
        (x1, y1), (x2, y2) = line.points
        return cls(line.name, (float(x1), float(y1)), (float(x2), float(y2)), frozenset(line.labels))

    def signed(self, points: np.ndarray) -> np.ndarray:
        """The documented s for ``(N, 2)`` points."""
        (x1, y1), (x2, y2) = self.p1, self.p2
        return (x2 - x1) * (points[:, 1] - y1) - (y2 - y1) * (points[:, 0] - x1)

    @cached_property
    def length(self) -> float:
        return float(np.hypot(self.p2[0] - self.p1[0], self.p2[1] - self.p1[1]))

    def position_along(self, point: np.ndarray) -> float:
        """Where the projection of ``point`` falls on the segment: 0 at P1, 1 at P2."""
        d = np.subtract(self.p2, self.p1)
        return float(np.dot(np.subtract(point, self.p1), d) / np.dot(d, d))


@dataclass(frozen=True)
class LineCrossing:
    line: str
    track_id: int
    label: str
    direction: Literal["in", "out"]
    # When the reference point passed over the line, interpolated between the two frames either
    # side of it on the capture-time line (None when the frames had no times): a crossing is
    # counted a frame or two later, once the point is clearly past the band, and a speed
    # measured between two counts would carry that delay and a whole frame interval of rounding.
    over_s: Optional[float] = None


class _LineState:
    """The tracks one line remembers, as arrays sorted by track id (no per-track objects).

    ``side`` is -1 or +1 once the track was clearly on a side, 0 before; ``last_point`` and
    ``last_s`` are its latest observation (``has_last`` False before the first); ``crossed_at``
    is where along the line (0 at P1, 1 at P2) its latest step passed over it, NaN for none, and
    ``crossed_ts`` when (``last_ts``: the time of the latest observation; NaN without times).
    """

    __slots__ = ("ids", "labels", "side", "has_last", "last_point", "last_s", "crossed_at", "last_ts", "crossed_ts")

    def __init__(self) -> None:
        self.ids = np.zeros(0, np.int64)
        self.labels = np.zeros(0, object)
        self.side = np.zeros(0, np.int64)
        self.has_last = np.zeros(0, bool)
        self.last_point = np.zeros((0, 2))
        self.last_s = np.zeros(0)
        self.crossed_at = np.zeros(0)
        self.last_ts = np.zeros(0)
        self.crossed_ts = np.zeros(0)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def rows_of(self, ids: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Row of each of ``ids`` (unique), made for those the line does not remember yet."""
        rows = self._find(ids)
        new = rows < 0
        if new.any():
            n = int(new.sum())
            self._put(np.concatenate([self.ids, ids[new]]), np.concatenate([self.labels, labels[new]]),
                      np.concatenate([self.side, np.zeros(n, np.int64)]), np.concatenate([self.has_last, np.zeros(n, bool)]),
                      np.concatenate([self.last_point, np.zeros((n, 2))]), np.concatenate([self.last_s, np.zeros(n)]),
                      np.concatenate([self.crossed_at, np.full(n, np.nan)]),
                      np.concatenate([self.last_ts, np.full(n, np.nan)]), np.concatenate([self.crossed_ts, np.full(n, np.nan)]))
            rows = self._find(ids)
        return rows

    def drop(self, gone: np.ndarray) -> None:
        keep = ~(self.ids[:, None] == gone).any(axis=1)
        if not keep.all():
            self._put(self.ids[keep], self.labels[keep], self.side[keep], self.has_last[keep], self.last_point[keep],
                      self.last_s[keep], self.crossed_at[keep], self.last_ts[keep], self.crossed_ts[keep])

    def _find(self, ids: np.ndarray) -> np.ndarray:
        if len(self) == 0:
            return np.full(ids.shape, -1, np.int64)
        rows = np.minimum(np.searchsorted(self.ids, ids), len(self) - 1)
        return np.where(self.ids[rows] == ids, rows, -1)

    def _put(self, ids, labels, side, has_last, last_point, last_s, crossed_at, last_ts, crossed_ts) -> None:
        order = np.argsort(ids, kind="stable")
        self.ids, self.labels, self.side, self.has_last = ids[order], labels[order], side[order], has_last[order]
        self.last_point, self.last_s, self.crossed_at = last_point[order], last_s[order], crossed_at[order]
        self.last_ts, self.crossed_ts = last_ts[order], crossed_ts[order]


@dataclass
class LineCounter:
    """Crossings of the tracks of one camera; ``update`` once per analysed frame.

    State is kept per track and line until :meth:`forget`: pass it ``Tracker.removed_ids``
    after every update, or it grows with every track ever seen. Whole-frame array operations:
    no Python loop over tracks.
    """

    lines: Sequence[Line]
    band: float = DEFAULT_BAND
    _state: Dict[str, _LineState] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.band < 1:
            raise ValueError("band must be in [0, 1)")
        names = [line.name for line in self.lines]
        if len(set(names)) != len(names):
            raise ValueError("line names must be unique")
        self._state = {line.name: _LineState() for line in self.lines}

    def __len__(self) -> int:
        """(line, track) pairs remembered now."""
        return sum(len(state) for state in self._state.values())

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray,
               ts: Optional[float] = None) -> List[LineCrossing]:
        """Feed the tracked objects of one frame (normalised reference points, ``ts`` its capture
        time); returns new crossings, line by line, within a line in the order of the objects."""
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(labels) != ids.shape[0] or points.shape[0] != ids.shape[0]:
            raise ValueError("track_ids, labels and points must have the same length")
        crossings: List[LineCrossing] = []
        tracked = ids >= 0
        if not tracked.any():
            return crossings
        label_array = np.asarray(labels, dtype=object)
        for line in self.lines:
            counted = tracked if not line.labels else tracked & np.isin(label_array, list(line.labels))
            index = np.flatnonzero(counted)
            if len(index):
                crossings.extend(self._observe(line, ids[index], label_array[index], points[index],
                                               np.nan if ts is None else float(ts)))
        return crossings

    def _observe(self, line: Line, ids: np.ndarray, labels: np.ndarray, points: np.ndarray,
                 ts: float) -> List[LineCrossing]:
        state = self._state[line.name]
        rows = state.rows_of(ids, labels)
        s = line.signed(points)
        clear = np.abs(s) >= self.band * line.length
        # Where the step from the last point to this one passes over the (infinite) line.
        last_s, last_point = state.last_s[rows], state.last_point[rows]
        over = state.has_last[rows] & ((last_s > 0) != (s > 0))
        if over.any():
            frac = last_s[over] / (last_s[over] - s[over])
            passed = last_point[over] + frac[:, None] * (points[over] - last_point[over])
            d = np.subtract(line.p2, line.p1)
            state.crossed_at[rows[over]] = ((passed - np.asarray(line.p1)) * d).sum(axis=1) / np.dot(d, d)
            last_ts = state.last_ts[rows[over]]
            state.crossed_ts[rows[over]] = last_ts + frac * (ts - last_ts)
        state.last_point[rows], state.last_s[rows], state.has_last[rows] = points, s, True
        state.last_ts[rows] = ts
        # Clearly on a side now: a crossing when it was clearly on the other and passed over the segment.
        r = rows[clear]
        side = np.where(s[clear] > 0, 1, -1)
        previous, crossed_at, crossed_ts = state.side[r], state.crossed_at[r], state.crossed_ts[r]
        state.side[r], state.crossed_at[r], state.crossed_ts[r] = side, np.nan, np.nan
        with np.errstate(invalid="ignore"):
            counts = (previous != 0) & (previous != side) & (crossed_at >= 0.0) & (crossed_at <= 1.0)
        return [LineCrossing(line.name, int(t), str(label), "in" if direction > 0 else "out",
                             None if np.isnan(over_s) else float(over_s))
                for t, label, direction, over_s in zip(ids[clear][counts], state.labels[r[counts]], side[counts],
                                                       crossed_ts[counts])]

    def forget(self, track_ids: Iterable[int]) -> None:
        """Drop the state of tracks that ended."""
        gone = np.fromiter((int(t) for t in track_ids), dtype=np.int64)
        if len(gone):
            for state in self._state.values():
                state.drop(gone)
