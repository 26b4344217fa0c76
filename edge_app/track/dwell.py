"""How long each tracked object has been in each zone, on the camera's capture-time line.

A visit opens when :class:`~edge_app.track.zones.ZoneTracker` reports an entry, at the time of
the first observation inside, and closes at the first observation outside, or, when the track
ends, at the last time the object was seen. While it is open, its dwell runs to the last time
the object was seen: a track lost behind a pillar neither gains time while unseen nor loses any
when it is seen again inside (the tracker keeps a lost track for ``events.end_after_s``), and a
track that ends unseen is not credited with the time it was already gone.

An object's dwell in a zone is the sum of its visits there. Pure: no clock, times passed in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Dict, Iterable, List, Mapping, Optional, Tuple


@dataclass(frozen=True)
class ZoneVisit:
    """One stay of one track in one zone; ``dwell_s`` up to the last sighting while it is open."""

    zone: str
    track_id: int
    label: str
    entered_s: float
    dwell_s: float
    left_s: Optional[float] = None  # None while the object is still in the zone

    @property
    def open(self) -> bool:
        return self.left_s is None


@dataclass
class _Open:
    label: str
    entered_s: float


class DwellClock:
    """Visits of the tracks of one camera. Per frame: :meth:`seen` with the tracked ids, then
    :meth:`enter`/:meth:`leave` for the zone changes, :meth:`end` for each track that ended."""

    def __init__(self) -> None:
        self._open: Dict[Tuple[str, int], _Open] = {}       # (zone, track) -> its open visit
        self._closed_s: Dict[int, Dict[str, float]] = {}    # track -> zone -> seconds of closed visits
        self._last_seen_s: Dict[int, float] = {}

    def __len__(self) -> int:
        """Open visits now."""
        return len(self._open)

    def seen(self, track_ids: Iterable[int], at_s: float) -> None:
        """The tracks observed in the frame taken at ``at_s``. Only tracks that have been in a zone
        are remembered (an entry notes its own time), so a crowd outside every zone costs nothing."""
        if not self._last_seen_s:
            return
        for track_id in track_ids:
            if track_id in self._last_seen_s:
                self._last_seen_s[track_id] = float(at_s)

    def enter(self, zone: str, track_id: int, label: str, at_s: float) -> None:
        """``track_id`` entered ``zone`` at ``at_s`` (an entry already open is kept)."""
        self._open.setdefault((zone, int(track_id)), _Open(label, float(at_s)))
        self._last_seen_s[int(track_id)] = max(self._last_seen_s.get(int(track_id), at_s), float(at_s))

    def leave(self, zone: str, track_id: int, at_s: Optional[float] = None) -> Optional[ZoneVisit]:
        """``track_id`` left ``zone`` at ``at_s`` (default: when it was last seen); the closed visit,
        None when it had none open."""
        visit = self._open.pop((zone, int(track_id)), None)
        if visit is None:
            return None
        last_s = self._last_seen_s.get(int(track_id), visit.entered_s)
        left_s = last_s if at_s is None else float(at_s)
        dwell_s = max(0.0, left_s - visit.entered_s)
        per_zone = self._closed_s.setdefault(int(track_id), {})
        per_zone[zone] = per_zone.get(zone, 0.0) + dwell_s
        return ZoneVisit(zone, int(track_id), visit.label, visit.entered_s, dwell_s, max(left_s, visit.entered_s))

    def end(self, track_id: int) -> List[ZoneVisit]:
        """The track ended: its open visits close when it was last seen, and it is forgotten."""
        track_id = int(track_id)
        closed = [self.leave(zone, track_id) for zone, t in list(self._open) if t == track_id]
        self._closed_s.pop(track_id, None)
        self._last_seen_s.pop(track_id, None)
        return [visit for visit in closed if visit is not None]

    def close_all(self) -> List[ZoneVisit]:
        """Every open visit closes when its object was last seen (shutdown, analysis switched
        off); the totals stay readable until :meth:`clear`."""
        return [visit for visit in (self.leave(v.zone, v.track_id) for v in self.open_visits()) if visit is not None]

    def clear(self) -> None:
        """Forget every track."""
        self._open.clear()
        self._closed_s.clear()
        self._last_seen_s.clear()

    def dwell_s(self, track_id: int) -> Dict[str, float]:
        """Seconds ``track_id`` has spent in each zone it has been in (open visits to its last sighting)."""
        track_id = int(track_id)
        totals = dict(self._closed_s.get(track_id, {}))
        for (zone, t), visit in self._open.items():
            if t == track_id:
                totals[zone] = totals.get(zone, 0.0) + self._running_s(track_id, visit)
        return totals

    def open_visits(self) -> List[ZoneVisit]:
        """Every open visit with its dwell so far, oldest entry first."""
        visits = [ZoneVisit(zone, t, v.label, v.entered_s, self._running_s(t, v)) for (zone, t), v in self._open.items()]
        return sorted(visits, key=lambda visit: (visit.entered_s, visit.zone, visit.track_id))

    def open_longer_than(self, limits_s: Mapping[str, float], skip: Container[Tuple[str, int]] = ()) -> List[ZoneVisit]:
        """Open visits that have lasted their zone's limit (zones without one never), except the
        ``(zone, track)`` pairs in ``skip``; oldest entry first. Per frame, so no object is made
        for the visits that have not."""
        found = []
        for (zone, track_id), visit in self._open.items():
            limit_s = limits_s.get(zone)
            if limit_s is None or (zone, track_id) in skip:
                continue
            dwell_s = self._running_s(track_id, visit)
            if dwell_s >= limit_s:
                found.append(ZoneVisit(zone, track_id, visit.label, visit.entered_s, dwell_s))
        return sorted(found, key=lambda v: (v.entered_s, v.zone, v.track_id))

    def _running_s(self, track_id: int, visit: _Open) -> float:
        return max(0.0, self._last_seen_s.get(track_id, visit.entered_s) - visit.entered_s)
