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

from edge_app.track.geometry import Point, points_in_polygons, polygon_edges, polygons_edges
from edge_app.track.label_filter import LabelFilter

DEFAULT_MIN_FRAMES = 3
DEFAULT_MIN_SPAN_S = 0.5

# the fields of a (track, zone) cell in _ZoneTable.state
KNOWN, INSIDE, STREAK, SINCE_S, SEQ = range(5)
_FIELDS = 5


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


class _ZoneTable:
    """What the zones remember of the tracks, one row per track and one column per zone, rows
    sorted by track id (no per-track objects; one gather and one scatter of a frame's rows).

    A track has a row from its first observation inside any zone until it ends. ``state[..., k]``
    holds, per (track, zone): KNOWN, 1 from the first observation inside the zone until the
    track has left it; INSIDE; STREAK, the consecutive observations that disagree with INSIDE;
    SINCE_S, the frame time of the first of them (NaN when frames carry no time); SEQ, when the
    cell was made, so occupants and exits keep that order. ``labels``: each track's first label.
    ``state`` has one more row, last, all zeros: the row of objects no zone remembers (``find``
    gives -1), so a frame gathers and scatters all its objects at once; what is written there
    for them is zeros again.
    """

    __slots__ = ("ids", "labels", "state")

    def __init__(self, zones: int) -> None:
        self.ids = np.zeros(0, np.int64)
        self.labels = np.zeros(0, object)
        self.state = np.zeros((1, zones, _FIELDS))

    def find(self, ids: np.ndarray) -> np.ndarray:
        """Row of each of ``ids``, -1 where no zone remembers it."""
        count = self.ids.shape[0]
        if count == 0:
            return np.full(ids.shape, -1, np.int64)
        rows = np.minimum(np.searchsorted(self.ids, ids), count - 1)
        return np.where(self.ids[rows] == ids, rows, -1)

    def add(self, ids: np.ndarray, labels: np.ndarray) -> None:
        """Rows for new tracks (``ids`` not in the table), nothing known yet."""
        order = np.argsort(np.concatenate([self.ids, ids]), kind="stable")
        self.ids = np.concatenate([self.ids, ids])[order]
        self.labels = np.concatenate([self.labels, labels])[order]
        rows = self.state[:-1], np.zeros((ids.shape[0] + 1,) + self.state.shape[1:])
        self.state = np.concatenate(rows)[np.append(order, len(order))]

    def keep(self, mask: np.ndarray) -> None:
        self.ids, self.labels, self.state = self.ids[mask], self.labels[mask], self.state[np.append(mask, True)]


@dataclass
class ZoneTracker:
    """Zone membership of the tracks of one camera; ``update`` once per analysed frame.

    Pass ``Tracker.removed_ids`` to :meth:`forget` after every update: ended tracks leave their
    zones then, and their state goes. Whole-frame array operations over every zone at once (one
    point-in-polygon pass over all their edges, one table of tracks by zones): no Python loop
    over tracks, and none over zones.
    """

    zones: Sequence[Zone]
    min_frames: int = DEFAULT_MIN_FRAMES
    min_span_s: float = DEFAULT_MIN_SPAN_S
    _table: _ZoneTable = field(default=None, init=False, repr=False)  # type: ignore[assignment]
    _next_seq: int = field(default=0, init=False, repr=False)
    _streaks: int = field(default=0, init=False, repr=False)  # cells with a streak: frames must reset or count them
    _occupants: Optional[Dict[str, Dict[str, int]]] = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.min_frames < 1:
            raise ValueError("min_frames must be >= 1")
        if not self.min_span_s >= 0:
            raise ValueError("min_span_s must be >= 0")
        names = [z.name for z in self.zones]
        if len(set(names)) != len(names):
            raise ValueError("zone names must be unique")
        self._names = names
        self._edges, self._starts = polygons_edges([z.polygon for z in self.zones])
        self._filter = LabelFilter([z.labels for z in self.zones])
        self._table = _ZoneTable(len(names))
        self._occupants = {}

    def __len__(self) -> int:
        """(zone, track) pairs remembered now."""
        return int((self._table.state[..., KNOWN] > 0).sum())

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
        tracked = ids >= 0
        if not self._names or not tracked.any():
            return []
        label_array = np.asarray(labels, dtype=object).reshape(-1)
        counted = self._filter.counted(label_array, tracked)
        inside = points_in_polygons(points, self._edges, self._starts) & counted
        table = self._table
        if not len(table.ids) and not inside.any():
            return []  # nobody in a zone, nobody on their way in or out: the common frame
        rows = table.find(ids)
        now_s = np.nan if ts_s is None else float(ts_s)
        changed, known, at_s = self._observe(rows, counted, inside, now_s)
        # New (zone, track) cells inside: remembered from now on, outside; the first observation counts.
        fresh = inside & ~known
        if fresh.any():
            self._remember(ids, label_array, rows, fresh, now_s)
            if self.min_frames <= 1:
                changed |= fresh
                at_s = np.where(fresh, now_s, at_s)
        if not changed.any():
            return []
        self._occupants = None
        zone_index, object_index = np.nonzero(changed.T)  # zone by zone, objects in order
        rows = table.find(ids[object_index])
        names = self._names
        return [ZoneChange(names[z], t, label, "enter" if now else "leave", None if at != at else at)
                for z, t, label, now, at in
                zip(zone_index.tolist(), ids[object_index].tolist(), table.labels[rows].tolist(),
                    inside[object_index, zone_index].tolist(), at_s[object_index, zone_index].tolist())]

    def _observe(self, rows: np.ndarray, counted: np.ndarray, inside: np.ndarray, now_s: float):
        """The remembered tracks of the frame: agreeing resets the streak; disagreeing
        min_frames times flips, and so does disagreeing twice or more over min_span_s of frame
        time. Returns which cells flipped, which were known and, where one flipped, the frame
        time of its first disagreeing observation (``ZoneChange.at_s``), ``(N, Z)`` each."""
        state = self._table.state[rows]  # a copy, written back whole
        known, was = state[..., KNOWN] > 0, state[..., INSIDE] > 0
        observed = known & counted
        disagree = observed & (inside != was)
        if not self._streaks and not disagree.any():
            return disagree, known, state[..., SINCE_S]  # everyone where they were, no streak to reset
        streak = np.where(disagree, state[..., STREAK] + 1, 0.0)
        since_s = np.where(streak == 1, now_s, state[..., SINCE_S])
        flip = disagree & ((streak >= self.min_frames) | ((streak >= 2) & (now_s - since_s >= self.min_span_s)))
        state[..., KNOWN] = known & ~(flip & ~inside)  # a track that left is forgotten there
        state[..., INSIDE] = was ^ flip
        state[..., STREAK] = np.where(observed, np.where(flip, 0.0, streak), state[..., STREAK])
        state[..., SINCE_S] = since_s
        self._table.state[rows] = state
        self._count_streaks()
        return flip, known, since_s

    def _count_streaks(self) -> None:
        self._streaks = int(np.count_nonzero(self._table.state[:-1, :, STREAK]))

    def _remember(self, ids: np.ndarray, labels: np.ndarray, rows: np.ndarray, fresh: np.ndarray, now_s: float) -> None:
        table = self._table
        new = (rows < 0) & fresh.any(axis=1)
        if new.any():
            table.add(ids[new], labels[new])
            rows = table.find(ids)
        zone_index, object_index = np.nonzero(fresh.T)  # cells made zone by zone, objects in order
        enter = self.min_frames <= 1
        cells = np.empty((len(zone_index), _FIELDS))
        cells[:, KNOWN], cells[:, INSIDE], cells[:, STREAK], cells[:, SINCE_S] = 1.0, enter, 0.0 if enter else 1.0, now_s
        cells[:, SEQ] = np.arange(self._next_seq, self._next_seq + len(zone_index))
        table.state[rows[object_index], zone_index] = cells
        self._next_seq += len(zone_index)
        if not enter:
            self._streaks += len(zone_index)

    def forget(self, track_ids: Iterable[int]) -> List[ZoneChange]:
        """Tracks that ended: they leave every zone they were in (in the order they were first seen there)."""
        table = self._table
        if not len(table.ids):
            return []
        gone = np.asarray(track_ids if isinstance(track_ids, (list, tuple, np.ndarray)) else list(track_ids),
                          dtype=np.int64).reshape(-1)
        if not len(gone):
            return []
        rows = table.find(gone)
        rows = rows[rows >= 0]
        if len(rows) == 0:
            return []
        state = table.state[rows]
        leaving = (state[..., KNOWN] > 0) & (state[..., INSIDE] > 0)
        changes: List[ZoneChange] = []
        if leaving.any():
            self._occupants = None
            row_index, zone_index = np.nonzero(leaving)
            order = np.argsort(state[row_index, zone_index, SEQ], kind="stable")
            row_index, zone_index = rows[row_index[order]], zone_index[order]
            names = self._names
            changes = [ZoneChange(names[z], t, label, "leave") for z, t, label in
                       zip(zone_index.tolist(), table.ids[row_index].tolist(), table.labels[row_index].tolist())]
        keep = np.ones(len(table.ids), bool)
        keep[rows] = False
        table.keep(keep)
        self._count_streaks()
        return changes

    def occupants(self) -> Dict[str, Dict[str, int]]:
        """Objects per zone and label now: ``{zone: {label: count}}``, zones without any left out.

        Zones and their labels come in the order their first occupant entered. Made again only
        after a frame that changed who is in a zone."""
        if self._occupants is None:
            self._occupants = self._count_occupants()
        return {zone: dict(per_label) for zone, per_label in self._occupants.items()}

    def _count_occupants(self) -> Dict[str, Dict[str, int]]:
        table = self._table
        state = table.state[:-1]
        row_index, zone_index = np.nonzero((state[..., KNOWN] > 0) & (state[..., INSIDE] > 0))
        order = np.argsort(state[row_index, zone_index, SEQ], kind="stable")
        counts: Dict[str, Dict[str, int]] = {}
        names = self._names
        for z, label in zip(zone_index[order].tolist(), table.labels[row_index[order]].tolist()):
            per_label = counts.setdefault(names[z], {})
            per_label[label] = per_label.get(label, 0) + 1
        return counts
