"""Which tracked objects are in which zone, without flicker at a zone's border.

An object enters a zone once its reference point has been inside for ``min_frames``
consecutive observations and leaves once it has been outside as long; a box wobbling on the
border changes nothing. With frame times, two observations in a row at least ``min_span_s``
apart settle it too: a camera analysed once a second would otherwise need three seconds inside,
and someone walking through a zone in two would never enter it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Literal, Optional, Sequence, Tuple

import numpy as np

from edge_app.track.geometry import Point, points_in_polygon

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


@dataclass
class _Presence:
    label: str
    inside: bool = False
    streak: int = 0            # consecutive observations that disagree with ``inside``
    since_s: Optional[float] = None   # frame time of the first of them


@dataclass
class ZoneTracker:
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
        if not self.min_span_s >= 0:
            raise ValueError("min_span_s must be >= 0")
        names = [z.name for z in self.zones]
        if len(set(names)) != len(names):
            raise ValueError("zone names must be unique")

    def update(self, track_ids: Sequence[int], labels: Sequence[str], points: np.ndarray,
               ts_s: Optional[float] = None) -> List[ZoneChange]:
        """Feed the tracked objects of one frame; returns the zone entries and exits they made.

        ``points`` are the ``(N, 2)`` normalised reference points; ids below 0 (untracked) are
        skipped. A track absent from a frame keeps its state: use :meth:`forget` when it ends.
        ``ts_s``, the frame's time, lets two observations ``min_span_s`` apart settle a change.
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
        spanned = (ts_s is not None and state.since_s is not None and state.streak >= 2
                   and ts_s - state.since_s >= self.min_span_s)
        if state.streak < self.min_frames and not spanned:
            return None
        state.inside, state.streak = inside, 0
        if not inside:
            del self._state[key]
        return ZoneChange(zone, track_id, state.label, "enter" if inside else "leave")

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
