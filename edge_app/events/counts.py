"""Object, zone and line counts of one camera, reported as changes.

``LabelCounts`` remembers every key it has seen since start, so a label (or zone and label)
whose objects all left reads 0 instead of disappearing: a retained ``{"count": 0}`` must replace
the last non-zero one on the broker. ``LineCounts`` holds tripwire totals and can be seeded with
persisted values, so they survive a restart.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Generic, Hashable, Iterable, Mapping, Optional, Tuple, TypeVar

from edge_app.track.lines import LineCrossing

K = TypeVar("K", bound=Hashable)


class LabelCounts(Generic[K]):
    """Current counts per key; :meth:`update` returns only the keys whose count changed."""

    def __init__(self) -> None:
        self._counts: Dict[K, int] = {}

    def update(self, now: Mapping[K, int]) -> Dict[K, int]:
        changes: Dict[K, int] = {}
        for key in set(self._counts) | set(now):
            count = int(now.get(key, 0))
            if self._counts.get(key) != count:
                changes[key] = count
                self._counts[key] = count
        return changes

    def snapshot(self) -> Dict[K, int]:
        """Every key seen since start with its count now (0 for those that left)."""
        return dict(self._counts)


@dataclass(frozen=True)
class LineTotals:
    count_in: int = 0
    count_out: int = 0

    def to_dict(self) -> Dict[str, int]:
        return {"in": self.count_in, "out": self.count_out}


class LineCounts:
    """Crossings per line since the counts were last reset.

    ``seed`` holds persisted totals (``{line: LineTotals}`` or ``{line: (in, out)}``); totals of
    lines no longer configured are dropped, new lines start at 0.
    """

    def __init__(self, lines: Iterable[str], seed: Optional[Mapping[str, object]] = None) -> None:
        self._totals: Dict[str, LineTotals] = {name: LineTotals() for name in lines}
        for name, value in (seed or {}).items():
            if name in self._totals:
                self._totals[name] = value if isinstance(value, LineTotals) else LineTotals(*_pair(value))

    def add(self, crossing: LineCrossing) -> LineTotals:
        totals = self._totals.get(crossing.line, LineTotals())
        if crossing.direction == "in":
            totals = LineTotals(totals.count_in + 1, totals.count_out)
        else:
            totals = LineTotals(totals.count_in, totals.count_out + 1)
        self._totals[crossing.line] = totals
        return totals

    def reset(self, line: Optional[str] = None) -> None:
        for name in [line] if line is not None else list(self._totals):
            if name in self._totals:
                self._totals[name] = LineTotals()

    def totals(self) -> Dict[str, LineTotals]:
        return dict(self._totals)


def _pair(value: object) -> Tuple[int, int]:
    count_in, count_out = value  # type: ignore[misc]
    count_in, count_out = int(count_in), int(count_out)
    if count_in < 0 or count_out < 0:
        raise ValueError(f"line counts cannot be negative, got {value!r}")
    return count_in, count_out
