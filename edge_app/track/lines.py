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
from typing import FrozenSet, Iterable, List, Literal, Optional, Sequence

import numpy as np

from edge_app.track.geometry import Point
from edge_app.track.label_filter import LabelFilter

DEFAULT_BAND = 0.02

# the fields of a (track, line) cell in _LineTable.state
X, Y, S, LAST_SIGN, SIDE, CROSSED_AT, LAST_TS, CROSSED_TS = range(8)
_FIELDS = 8


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


class _LineTable:
    """What the lines remember of the tracks, one row per track and one column per line, rows
    sorted by track id (no per-track objects; one gather and one scatter of a frame's rows).

    ``state[..., k]`` holds, per (track, line): X and Y of the latest observation the line
    counted, its S (the documented s) and LAST_SIGN, +1 where S > 0, else -1 (0 before the
    first observation); SIDE, -1 or +1 once the
    track was clearly on a side, 0 before; CROSSED_AT, where along the line (0 at P1, 1 at P2)
    its latest step passed over it, NaN for none; CROSSED_TS, when (LAST_TS: the frame time of
    the latest observation; NaN without times). ``labels``: each track's first label.
    ``state`` has one more row, last: the row of objects no line counts (``rows_of`` gives -1),
    so a frame gathers and scatters all its objects at once; nothing changes there.
    """

    __slots__ = ("ids", "labels", "state")

    def __init__(self, lines: int) -> None:
        self.ids = np.zeros(0, np.int64)
        self.labels = np.zeros(0, object)
        self.state = _fresh(1, lines)

    def rows_of(self, ids: np.ndarray, labels: Sequence[str], counted: np.ndarray) -> np.ndarray:
        """Row of each of ``ids`` (unique), made for those not in the table yet that ``counted``
        ``(N,)`` says a line counts; -1 for the others."""
        rows = self._find(ids)
        new = (rows < 0) & counted
        if new.any():
            order = np.argsort(np.concatenate([self.ids, ids[new]]), kind="stable")
            self.ids = np.concatenate([self.ids, ids[new]])[order]
            self.labels = np.concatenate([self.labels, np.asarray(labels, dtype=object)[new]])[order]
            self.state = np.concatenate([self.state[:-1], _fresh(int(new.sum()) + 1, self.state.shape[1])])[
                np.append(order, len(order))]
            rows = self._find(ids)
        return rows

    def drop(self, gone: np.ndarray) -> None:
        rows = self._find(gone)
        rows = rows[rows >= 0]
        if len(rows):
            keep = np.ones(len(self.ids), bool)
            keep[rows] = False
            self.ids, self.labels, self.state = self.ids[keep], self.labels[keep], self.state[np.append(keep, True)]

    def _find(self, ids: np.ndarray) -> np.ndarray:
        count = self.ids.shape[0]
        if count == 0:
            return np.full(ids.shape, -1, np.int64)
        rows = np.minimum(np.searchsorted(self.ids, ids), count - 1)
        return np.where(self.ids[rows] == ids, rows, -1)


def _fresh(tracks: int, lines: int) -> np.ndarray:
    state = np.zeros((tracks, lines, _FIELDS))
    state[..., CROSSED_AT] = state[..., LAST_TS] = state[..., CROSSED_TS] = np.nan
    return state


@dataclass
class LineCounter:
    """Crossings of the tracks of one camera; ``update`` once per analysed frame.

    State is kept per track and line until :meth:`forget`: pass it ``Tracker.removed_ids``
    after every update, or it grows with every track ever seen. Whole-frame array operations over
    every line at once: no Python loop over tracks, and none over lines.
    """

    lines: Sequence[Line]
    band: float = DEFAULT_BAND
    _table: _LineTable = field(default=None, init=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if not 0 <= self.band < 1:
            raise ValueError("band must be in [0, 1)")
        names = [line.name for line in self.lines]
        if len(set(names)) != len(names):
            raise ValueError("line names must be unique")
        self._names = names
        self._filter = LabelFilter([line.labels for line in self.lines])
        self._table = _LineTable(len(names))
        # (L,) each: P1, the direction P1 -> P2 and its squared length, the band in s units
        self._p1 = np.array([line.p1 for line in self.lines], np.float64).reshape(-1, 2)
        self._d = np.array([line.p2 for line in self.lines], np.float64).reshape(-1, 2) - self._p1
        self._dd = (self._d ** 2).sum(axis=1)
        self._clear_s = np.array([self.band * line.length for line in self.lines], np.float64)
        self._spare = _fresh(1, len(names))[0]

    def __len__(self) -> int:
        """(line, track) pairs remembered now."""
        return int((self._table.state[:-1, :, LAST_SIGN] != 0).sum())

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray,
               ts: Optional[float] = None) -> List[LineCrossing]:
        """Feed the tracked objects of one frame (normalised reference points, ``ts`` its capture
        time); returns new crossings, line by line, within a line in the order of the objects."""
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(labels) != ids.shape[0] or points.shape[0] != ids.shape[0]:
            raise ValueError("track_ids, labels and points must have the same length")
        tracked = ids >= 0
        if not self._names or not tracked.any():
            return []
        # Without label filters every tracked object counts for every line, and the others use
        # the spare row: no mask is needed, the spare row is made fresh again below.
        counted = self._filter.counted(np.asarray(labels, dtype=object), tracked) if self._filter.filtered else None
        if counted is not None:
            tracked = counted.any(axis=1)
            if not tracked.any():
                return []
        table = self._table
        rows = table.rows_of(ids, labels, tracked)
        # The documented s of every point for every line, (N, L), and its sign (+1 for s > 0).
        s = self._d[:, 0] * (points[:, 1:2] - self._p1[:, 1]) - self._d[:, 1] * (points[:, 0:1] - self._p1[:, 0])
        sign = np.where(s > 0, 1.0, -1.0)
        state = table.state[rows]  # a copy, written back whole
        before = state.copy() if counted is not None else None
        # (views of ``state``; CROSSED_TS is read for the crossings after the state is written below)
        crossed_at, crossed_ts, previous = state[..., CROSSED_AT], state[..., CROSSED_TS].copy(), state[..., SIDE]
        now_s = np.nan if ts is None else float(ts)
        # Where the step from the last point to this one passes over the (infinite) line: the
        # sign changed (LAST_SIGN is 0 before the first point).
        over = state[..., LAST_SIGN] * sign < 0
        if counted is not None:
            over &= counted
        if over.any():
            last_s, last_point = state[..., S], state[..., X:Y + 1]
            frac = last_s / np.where(over, last_s - s, 1.0)
            passed = last_point + frac[..., None] * (points[:, None, :] - last_point)
            crossed_at = np.where(over, ((passed - self._p1) * self._d).sum(axis=2) / self._dd, crossed_at)
            last_ts = state[..., LAST_TS]
            crossed_ts = np.where(over, last_ts + frac * (now_s - last_ts), crossed_ts)
        # Clearly on a side now: a crossing when it was clearly on the other (SIDE is the other
        # sign; 0 before any side) and passed over the segment.
        clear = np.abs(s) >= self._clear_s
        if counted is not None:
            clear &= counted
        crossing = clear & (previous * sign < 0)
        if crossing.any():
            crossing &= (crossed_at >= 0.0) & (crossed_at <= 1.0)
        state[..., CROSSED_AT] = np.where(clear, np.nan, crossed_at)
        state[..., CROSSED_TS] = np.where(clear, np.nan, crossed_ts)
        state[..., LAST_TS] = now_s
        state[..., SIDE] = np.where(clear, sign, previous)
        state[..., X:Y + 1] = points[:, None, :]
        state[..., S] = s
        state[..., LAST_SIGN] = sign
        table.state[rows] = state if counted is None else np.where(counted[..., None], state, before)
        table.state[-1] = self._spare
        if not crossing.any():
            return []
        line_index, object_index = np.nonzero(crossing.T)  # line by line, objects in order
        names = self._names
        return [LineCrossing(names[li], t, label, "in" if direction > 0 else "out", None if over_s != over_s else over_s)
                for li, t, label, direction, over_s in
                zip(line_index.tolist(), ids[object_index].tolist(), table.labels[rows[object_index]].tolist(),
                    sign[object_index, line_index].tolist(), crossed_ts[object_index, line_index].tolist())]

    def forget(self, track_ids: Iterable[int]) -> None:
        """Drop the state of tracks that ended."""
        if len(self._table.ids):
            gone = np.asarray(track_ids if isinstance(track_ids, (list, tuple, np.ndarray)) else list(track_ids),
                              dtype=np.int64).reshape(-1)
            if len(gone):
                self._table.drop(gone)
