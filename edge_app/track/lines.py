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
from typing import Dict, FrozenSet, Iterable, List, Literal, Optional, Sequence, Tuple

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

    @property
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


@dataclass
class _Passage:
    label: str
    side: int = 0                             # -1 or +1 once clearly on a side, 0 before
    last_point: Optional[np.ndarray] = None
    last_s: float = 0.0
    crossed_at: Optional[float] = None        # position along the line of the latest pass over it


@dataclass
class LineCounter:
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

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray) -> List[LineCrossing]:
        """Feed the tracked objects of one frame (normalised reference points); returns new crossings."""
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
                    crossing = self._observe(line, int(ids[i]), labels[i], points[i], float(s[i]), bool(clear[i]))
                    if crossing is not None:
                        crossings.append(crossing)
        return crossings

    def _observe(self, line: Line, track_id: int, label: str, point: np.ndarray, s: float, clear: bool) -> Optional[LineCrossing]:
        state = self._state.setdefault((line.name, track_id), _Passage(label))
        if state.last_point is not None and (state.last_s > 0) != (s > 0):
            # Where the step from the last point to this one passes over the (infinite) line.
            frac = state.last_s / (state.last_s - s)
            state.crossed_at = line.position_along(state.last_point + frac * (point - state.last_point))
        state.last_point, state.last_s = point, s
        if not clear:
            return None
        side = 1 if s > 0 else -1
        previous, state.side = state.side, side
        crossed_at, state.crossed_at = state.crossed_at, None
        if previous == 0 or previous == side or crossed_at is None or not 0.0 <= crossed_at <= 1.0:
            return None
        return LineCrossing(line.name, track_id, state.label, "in" if side > 0 else "out")

    def forget(self, track_ids: Iterable[int]) -> None:
        """Drop the state of tracks that ended."""
        gone = set(int(t) for t in track_ids)
        for key in [k for k in self._state if k[1] in gone]:
            del self._state[key]
