"""Limits turned into problems (a pure function), and the log line once per change of the problem set."""
from __future__ import annotations

import logging
from typing import FrozenSet, List

from edge_app.config.schema import HealthLimitsConfig
from edge_app.health.nvml import THROTTLING_REASONS
from edge_app.health.report import HealthReport, Problem, ThermalReport

log = logging.getLogger(__name__)

HOT, THROTTLING, DISK_FULL, MEMORY_FULL = "hot", "throttling", "disk_full", "memory_full"
PROBLEM_KINDS = (HOT, THROTTLING, DISK_FULL, MEMORY_FULL)


def find_problems(report: HealthReport, limits: HealthLimitsConfig) -> List[Problem]:
    """Every limit ``report`` crosses, in a stable order (hot, throttling, disk, memory)."""
    problems: List[Problem] = []
    thermal = report.thermal if isinstance(report.thermal, ThermalReport) else None
    gpus = report.gpu if isinstance(report.gpu, list) else []
    # One problem for the board, named after its hottest zone: nine zones of one hot SoC are one fact.
    hot = sorted((z for z in (thermal.zones if thermal else []) if isinstance(z.temperature_c, float)
                  and z.temperature_c >= limits.temperature_c), key=lambda z: -z.temperature_c)
    if hot:
        zone = hot[0]
        others = f" and {len(hot) - 1} more zones" if len(hot) > 1 else ""
        problems.append(Problem(HOT, "board", f"{zone.name} at {zone.temperature_c:.1f} °C{others} "
                                f"(limit {limits.temperature_c:g} °C)", zone.temperature_c, limits.temperature_c))
    for gpu in gpus:
        if gpu.kind == "nvml" and isinstance(gpu.temperature_c, float) and gpu.temperature_c >= limits.temperature_c:
            problems.append(Problem(HOT, f"gpu{gpu.index}", f"GPU {gpu.index} at {gpu.temperature_c:.1f} °C "
                                    f"(limit {limits.temperature_c:g} °C)", gpu.temperature_c, limits.temperature_c))
    if limits.throttling:
        if thermal is not None and thermal.throttling is True:
            problems.append(Problem(THROTTLING, "soc", "the clocks are throttled (a zone past its passive trip "
                                                       "point, or an over-current event)"))
        for gpu in gpus:
            reasons = gpu.throttle_reasons if isinstance(gpu.throttle_reasons, list) else []
            slowed = [r for r in reasons if r in THROTTLING_REASONS]
            if slowed:
                problems.append(Problem(THROTTLING, f"gpu{gpu.index}", f"GPU {gpu.index} throttled: {', '.join(slowed)}"))
    for disk in report.disk if isinstance(report.disk, list) else []:
        if isinstance(disk.used_percent, float) and disk.used_percent >= limits.disk_percent:
            problems.append(Problem(DISK_FULL, disk.path, f"disk of {disk.path} {disk.used_percent:.1f} % full "
                                    f"(limit {limits.disk_percent:g} %)", disk.used_percent, limits.disk_percent))
    memory = report.memory
    if not isinstance(memory, str) and memory.used_percent >= limits.memory_percent:
        problems.append(Problem(MEMORY_FULL, "memory", f"memory {memory.used_percent:.1f} % used "
                                f"(limit {limits.memory_percent:g} %)", memory.used_percent, limits.memory_percent))
    return problems


class ProblemLog:
    """Logs when the set of problems changes (a new one, one gone), never once per sample."""

    def __init__(self, logger: logging.Logger = log):
        self._log = logger
        self._keys: FrozenSet[str] = frozenset()

    def note(self, problems: List[Problem]) -> bool:
        """True when the set changed (and a line was logged)."""
        keys = frozenset(p.key for p in problems)
        if keys == self._keys:
            return False
        new = [p for p in problems if p.key not in self._keys]
        gone = sorted(self._keys - keys)
        self._keys = keys
        if new:
            self._log.warning("device health: %s%s", "; ".join(p.message for p in new),
                              f" (no longer: {', '.join(gone)})" if gone else "")
        elif keys:
            self._log.info("device health: no longer %s; still %s", ", ".join(gone), ", ".join(sorted(keys)))
        else:
            self._log.info("device health: no problems (no longer %s)", ", ".join(gone))
        return True
