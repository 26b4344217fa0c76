"""Per zone: how many objects are in it now, their mean dwell over the last hour, and the alerts.

The mean is over the visits that ended in the last ``window_s`` (an hour) of capture time,
whole visits only: someone still standing in the zone counts once they leave. ``over_capacity``
is set while more objects than the zone's ``max_objects`` are inside. A zone's figures are
reported as changes, like the other counts, so a retained message goes out only when one moved.

Pure: no clock, no I/O.
"""
from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Deque, Dict, Mapping, Optional, Sequence, Tuple

from edge_app.track.dwell import ZoneVisit

MEAN_WINDOW_S = 3600.0
#: visits remembered per zone for the mean: a bound on memory at a busy entrance (the oldest go first)
MAX_VISITS_PER_ZONE = 20_000


@dataclass(frozen=True)
class ZoneStats:
    """A zone now (``R/zones/<zone>``, ``zone_stats`` of ``GET /api/v1/counts``)."""

    occupancy: int                  # objects of the zone's labels inside now
    mean_dwell_s: Optional[float]   # mean dwell of the visits that ended in the last hour; None: none did
    visits_last_hour: int
    loitering: int                  # objects inside longer than loitering_s now (0 without a limit)
    max_objects: Optional[int]      # the zone's limit, None without one
    over_capacity: bool             # occupancy > max_objects

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


class ZoneStatsBook:
    """The figures of the zones of one camera."""

    def __init__(self, zones: Sequence[str], max_objects: Mapping[str, int], window_s: float = MEAN_WINDOW_S) -> None:
        if window_s <= 0:
            raise ValueError("window_s must be > 0")
        self.window_s = float(window_s)
        self._max_objects = dict(max_objects)
        self._visits: Dict[str, Deque[Tuple[float, float]]] = {zone: deque() for zone in zones}  # (left_s, dwell_s)
        self._sums_s: Dict[str, float] = {zone: 0.0 for zone in zones}
        self._stats: Dict[str, ZoneStats] = {}

    def visit_closed(self, visit: ZoneVisit) -> None:
        visits = self._visits.get(visit.zone)
        if visits is None or visit.left_s is None:
            return
        if len(visits) >= MAX_VISITS_PER_ZONE:
            self._sums_s[visit.zone] -= visits.popleft()[1]
        visits.append((visit.left_s, visit.dwell_s))
        self._sums_s[visit.zone] += visit.dwell_s

    def update(self, now_s: float, occupancy: Mapping[str, int], loitering: Mapping[str, int]) -> Dict[str, ZoneStats]:
        """Each zone's figures at ``now_s``; returns those that changed (every zone the first time)."""
        changed = {}
        for zone, visits in self._visits.items():
            while visits and visits[0][0] < now_s - self.window_s:
                self._sums_s[zone] -= visits.popleft()[1]
            if not visits:
                self._sums_s[zone] = 0.0  # no drift from adding and taking away floats
            mean_s = round(self._sums_s[zone] / len(visits), 1) if visits else None
            inside = int(occupancy.get(zone, 0))
            limit = self._max_objects.get(zone)
            stats = ZoneStats(inside, mean_s, len(visits), int(loitering.get(zone, 0)), limit,
                              limit is not None and inside > limit)
            if self._stats.get(zone) != stats:
                self._stats[zone] = changed[zone] = stats
        return changed

    def snapshot(self) -> Dict[str, ZoneStats]:
        return dict(self._stats)
