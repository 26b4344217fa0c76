"""Speed of objects crossing a line pair (docs/analytics.md, "Speed").

A pair is two lines of one camera a known real-world distance apart (``cameras[].lines[].speed``).
An object that crosses one of them and then the other, in either order, travelled
``distance_m`` in the time between the two crossings; the times are those at which its reference
point passed over each line, interpolated between frames on the camera's capture-time line
(``LineCrossing.over_s``), so neither the analysed frame rate nor the processing delay rounds them.

Pure: no clock, no I/O; state is kept per pair and track until :meth:`SpeedMeter.forget`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from edge_app.track.lines import LineCrossing

KMH_PER_MPS = 3.6
KM_PER_MILE = 1.609344


def speed_kmh(distance_m: float, first_s: float, second_s: float) -> Optional[float]:
    """``distance_m`` covered between the times ``first_s`` and ``second_s``, in km/h; None when
    no time passed (or it ran backwards: the two crossings cannot be a passage)."""
    elapsed_s = second_s - first_s
    if not elapsed_s > 0 or not distance_m > 0:
        return None
    return distance_m / elapsed_s * KMH_PER_MPS


def kmh_to_mph(kmh: float) -> float:
    return kmh / KM_PER_MILE


@dataclass(frozen=True)
class SpeedPair:
    """Two lines ``first`` and ``second`` of one camera ``distance_m`` apart; the pair is named
    after ``first``, the line whose configuration holds the speed section."""

    first: str
    second: str
    distance_m: float
    max_kmh: Optional[float] = None
    unit: str = "kmh"

    def __post_init__(self) -> None:
        if self.first == self.second:
            raise ValueError(f"speed pair {self.first!r} needs two different lines")
        if not self.distance_m > 0:
            raise ValueError(f"speed pair {self.first!r}: distance_m must be > 0, got {self.distance_m!r}")

    @classmethod
    def from_config(cls, line) -> Optional["SpeedPair"]:
        """From a ``cameras[].lines`` entry (``LineConfig``); None when it has no speed section."""
        speed = line.speed
        if speed is None:
            return None
        return cls(line.name, speed.to_line, float(speed.distance_m), speed.max_kmh, speed.unit)

    def holds(self, line: str) -> bool:
        return line in (self.first, self.second)


@dataclass(frozen=True)
class SpeedReading:
    """One speed measured: the object ``track_id`` crossed ``from_line`` and then ``line`` of the pair."""

    pair: str               # the pair's name (its first line)
    line: str               # the line whose crossing completed the measurement
    from_line: str
    track_id: int
    label: str
    speed_kmh: float
    unit: str = "kmh"
    max_kmh: Optional[float] = None

    @property
    def speed_mph(self) -> float:
        return kmh_to_mph(self.speed_kmh)

    @property
    def over_limit(self) -> bool:
        return self.max_kmh is not None and self.speed_kmh > self.max_kmh


@dataclass
class SpeedMeter:
    """Speeds of the tracks of one camera over its line pairs; :meth:`observe` each frame's
    crossings, :meth:`forget` the tracks that ended."""

    pairs: Sequence[SpeedPair]
    # (pair, track) -> (line crossed, when): the latest crossing of one line of the pair
    _started: Dict[Tuple[str, int], Tuple[str, float]] = field(default_factory=dict, init=False, repr=False)

    def __len__(self) -> int:
        return len(self._started)

    def observe(self, crossings: Iterable[LineCrossing]) -> List[SpeedReading]:
        """Readings completed by ``crossings`` (in their order); a crossing without a time is skipped."""
        readings: List[SpeedReading] = []
        for crossing in crossings:
            if crossing.over_s is None:
                continue
            for pair in self.pairs:
                if pair.holds(crossing.line):
                    reading = self._cross(pair, crossing)
                    if reading is not None:
                        readings.append(reading)
        return readings

    def _cross(self, pair: SpeedPair, crossing: LineCrossing) -> Optional[SpeedReading]:
        key = (pair.first, crossing.track_id)
        started = self._started.get(key)
        self._started[key] = (crossing.line, float(crossing.over_s))
        if started is None or started[0] == crossing.line:
            # First line of a passage, or the same line again (turned back): the passage starts anew.
            return None
        kmh = speed_kmh(pair.distance_m, started[1], float(crossing.over_s))
        # A passage ends with its second line; the next crossing of it starts another one.
        if kmh is None:
            return None
        return SpeedReading(pair.first, crossing.line, started[0], crossing.track_id, crossing.label, kmh,
                            pair.unit, pair.max_kmh)

    def forget(self, track_ids: Iterable[int]) -> None:
        gone = set(int(t) for t in track_ids)
        if gone:
            self._started = {key: value for key, value in self._started.items() if key[1] not in gone}
