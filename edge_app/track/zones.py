"""Which tracked objects are in which zone, without flicker at a zone's border.

An object enters a zone once its reference point has been inside for ``min_frames``
consecutive observations and leaves once it has been outside as long; a box wobbling on the
border changes nothing. With frame times, two observations in a row at least ``min_span_s``
apart settle it too: a camera analysed once a second would otherwise need three seconds inside,
and someone walking through a zone in two would never enter it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, FrozenSet, Iterable, List, Literal, Optional, Sequence, Tuple

import numpy as np

from edge_app.track.geometry import Point, points_in_polygon, polygon_edges

DEFAULT_MIN_FRAMES = 3
DEFAULT_MIN_SPAN_S = 0.5


@dataclass(frozen=True)
class Zone:
    name: str
    polygon: Tuple[Point, ...]
    labels: FrozenSet[str] = frozenset()   # empty: every label counts

    def __post_init__(self) -> None:
        if len(self.polygon) < 3:
            raise ValueError(f"zone {self.name!r} needs at least 3 points")

    def counts(self, label: str) -> bool:
        return not self.labels or label in self.labels

    @cached_property
    def edges(self) -> np.ndarray:
        """The polygon's edges for ``points_in_polygon``, made once."""
        return polygon_edges(self.polygon)

    @classmethod
    def from_config(cls, zone) -> "Zone":
        """From a ``cameras[].zones`` entry of the configuration (``ZoneConfig``)."""
        return cls(zone.name, tuple((float(x), float(y)) for x, y in zone.polygon), frozenset(zone.labels))


@dataclass(frozen=True)
class ZoneChange:
    zone: str
    track_id: int
    label: str
    change: Literal["enter", "leave"]
    # Frame time of the first observation of the change (the first inside for an entry, the
    # first outside for an exit): the object crossed the border then, not when it was settled.
    # None for tracks that ended (forget) and for frames without times.
    at_s: Optional[float] = None


class _ZoneState:
    """The tracks one zone remembers, as arrays sorted by track id (no per-track objects).

    A track is remembered from its first observation inside until it has left (or ended);
    ``streak`` counts the consecutive observations that disagree with ``inside``, ``since_s`` holds
the frame time of the first of them (NaN when frames carry no time); ``seq`` orders
    the rows by when they were made, across zones, so occupants and exits keep that order.
    """

    __slots__ = ("ids", "inside", "streak", "since_s", "labels", "seq")

    def __init__(self) -> None:
        self.ids = np.zeros(0, np.int64)
        self.inside = np.zeros(0, bool)
        self.streak = np.zeros(0, np.int64)
        self.since_s = np.zeros(0, np.float64)
        self.labels = np.zeros(0, object)
        self.seq = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def find(self, ids: np.ndarray) -> np.ndarray:
        """Row of each of ``ids``, -1 where the zone does not remember it."""
        if len(self) == 0:
            return np.full(ids.shape, -1, np.int64)
        rows = np.minimum(np.searchsorted(self.ids, ids), len(self) - 1)
        return np.where(self.ids[rows] == ids, rows, -1)

    def keep(self, mask: np.ndarray) -> None:
        self.ids, self.inside, self.streak = self.ids[mask], self.inside[mask], self.streak[mask]
        self.since_s, self.labels, self.seq = self.since_s[mask], self.labels[mask], self.seq[mask]

    def add(self, ids: np.ndarray, inside: np.ndarray, streak: np.ndarray, since_s: np.ndarray, labels: np.ndarray,
            seq: np.ndarray) -> None:
        order = np.argsort(np.concatenate([self.ids, ids]), kind="stable")
        self.ids = np.concatenate([self.ids, ids])[order]
        self.inside = np.concatenate([self.inside, inside])[order]
        self.streak = np.concatenate([self.streak, streak])[order]
        self.since_s = np.concatenate([self.since_s, since_s])[order]
        self.labels = np.concatenate([self.labels, labels])[order]
        self.seq = np.concatenate([self.seq, seq])[order]


@dataclass
class ZoneTracker:
    """Zone membership of the tracks of one camera; ``update`` once per analysed frame.

    Pass ``Tracker.removed_ids`` to :meth:`forget` after every update: ended tracks leave their
    zones then, and their state goes. Whole-frame array operations: no Python loop over tracks.
    """

    zones: Sequence[Zone]
    min_frames: int = DEFAULT_MIN_FRAMES
    min_span_s: float = DEFAULT_MIN_SPAN_S
    _state: Dict[str, _ZoneState] = field(default_factory=dict, init=False, repr=False)
    _next_seq: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.min_frames < 1:
            raise ValueError("min_frames must be >= 1")
        if not self.min_span_s >= 0:
            raise ValueError("min_span_s must be >= 0")
        names = [z.name for z in self.zones]
        if len(set(names)) != len(names):
            raise ValueError("zone names must be unique")
        self._state = {z.name: _ZoneState() for z in self.zones}

    def __len__(self) -> int:
        """(zone, track) pairs remembered now."""
        return sum(len(state) for state in self._state.values())

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray,
               ts_s: Optional[float] = None) -> List[ZoneChange]:
        """Feed the tracked objects of one frame; returns the zone entries and exits they made.

        ``points`` are the ``(N, 2)`` normalised reference points; ids below 0 (untracked) are
        skipped. A track absent from a frame keeps its state: use :meth:`forget` when it ends.
        ``ts_s``, the frame's time, lets two observations ``min_span_s`` apart settle a change.
        Changes come zone by zone, within a zone in the order of the objects.
        """
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(labels) != ids.shape[0] or points.shape[0] != ids.shape[0]:
            raise ValueError("track_ids, labels and points must have the same length")
        changes: List[ZoneChange] = []
        tracked = ids >= 0
        if not tracked.any():
            return changes
        label_array = np.asarray(labels, dtype=object)
        for zone in self.zones:
            counted = tracked if not zone.labels else tracked & np.isin(label_array, list(zone.labels))
            index = np.flatnonzero(counted)
            if len(index) == 0:
                continue
            changes.extend(self._observe(zone.name, index, ids[index], label_array[index],
                                         points_in_polygon(points[index], zone.polygon, zone.edges), ts_s))
        return changes

    def _observe(self, zone: str, index: np.ndarray, ids: np.ndarray, labels: np.ndarray,
                 inside: np.ndarray, ts_s: Optional[float]) -> List[ZoneChange]:
        state = self._state[zone]
        if len(state) == 0 and not inside.any():
            return []  # nobody in the zone, nobody on their way in or out: the common frame
        rows = state.find(ids)
        known = rows >= 0
        now_s = np.nan if ts_s is None else float(ts_s)
        # Remembered tracks: agreeing resets the streak; disagreeing min_frames times flips, and
        # so does disagreeing twice or more over min_span_s of frame time.
        r = rows[known]
        disagree = inside[known] != state.inside[r]
        streak = np.where(disagree, state.streak[r] + 1, 0)
        since_s = np.where(streak == 1, now_s, state.since_s[r])
        with np.errstate(invalid="ignore"):
            spanned = (streak >= 2) & (now_s - since_s >= self.min_span_s)
        flip = (streak >= self.min_frames) | spanned
        state.streak[r] = np.where(flip, 0, streak)
        state.since_s[r] = since_s
        state.inside[r[flip]] = inside[known][flip]
        events = [(int(i), int(t), str(label), bool(now), float(at)) for i, t, label, now, at in
                  zip(index[known][flip], ids[known][flip], state.labels[r[flip]], inside[known][flip], since_s[flip])]
        left = r[flip & ~inside[known]]
        if len(left):  # a track that left is forgotten (before new rows move the others)
            keep = np.ones(len(state), bool)
            keep[left] = False
            state.keep(keep)
        # New tracks inside: remembered from now on, outside; the first observation counts.
        fresh = ~known & inside
        if fresh.any():
            n = int(fresh.sum())
            seq = np.arange(self._next_seq, self._next_seq + n, dtype=np.int64)
            self._next_seq += n
            enter = self.min_frames <= 1
            state.add(ids[fresh], np.full(n, enter), np.zeros(n, np.int64) if enter else np.ones(n, np.int64),
                      np.full(n, now_s), labels[fresh], seq)
            if enter:
                events += [(int(i), int(t), str(label), True, now_s) for i, t, label in
                           zip(index[fresh], ids[fresh], labels[fresh])]
        events.sort(key=lambda e: e[0])
        return [ZoneChange(zone, track_id, label, "enter" if now else "leave", None if np.isnan(at) else at)
                for _, track_id, label, now, at in events]

    def forget(self, track_ids: Iterable[int]) -> List[ZoneChange]:
        """Tracks that ended: they leave every zone they were in (in the order they were first seen there)."""
        gone = np.fromiter((int(t) for t in track_ids), dtype=np.int64)
        if len(gone) == 0:
            return []
        leaving = []
        for zone, state in self._state.items():
            ending = (state.ids[:, None] == gone).any(axis=1)
            if not ending.any():
                continue
            was_inside = ending & state.inside
            leaving += [(int(seq), zone, int(t), str(label)) for seq, t, label in
                        zip(state.seq[was_inside], state.ids[was_inside], state.labels[was_inside])]
            state.keep(~ending)
        leaving.sort()
        return [ZoneChange(zone, track_id, label, "leave") for _, zone, track_id, label in leaving]

    def occupants(self) -> Dict[str, Dict[str, int]]:
        """Objects per zone and label now: ``{zone: {label: count}}``, zones without any left out."""
        present = sorted((int(seq), zone, str(label)) for zone, state in self._state.items()
                         for seq, label in zip(state.seq[state.inside], state.labels[state.inside]))
        counts: Dict[str, Dict[str, int]] = {}
        for _, zone, label in present:
            per_label = counts.setdefault(zone, {})
            per_label[label] = per_label.get(label, 0) + 1
        return counts
