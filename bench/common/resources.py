"""Process resources over a measuring window: CPU time (whole process and per thread), RSS.

Per-thread CPU comes from /proc/self/task/<tid>/stat and is grouped by the Python thread's name
(``pipeline:gather`` -> ``gather``). Threads Python does not know (ONNX Runtime's and OpenCV's
pools, FFmpeg's decoder threads) and threads that ended during the window are counted as
``native``: the process total minus the named threads.

Decoder processes (``decoder: nvdec`` decodes each camera in a child process) and the engine
process (``model.engine_process``) are the appliance's work too: the CPU time of the
``multiprocessing`` children alive during the window is added to the total, as the group
``decoders``, ``engine`` or ``trackers`` (``tracking.processes``) by the child's name.
"""
from __future__ import annotations

import logging
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

# The grouping rules and /proc readers are the appliance's own (GET /metrics uses them too).
from edge_app.health.cpu_groups import START, child_groups, read_cpu, thread_groups

log = logging.getLogger(__name__)


def _status_kib(key: str) -> Optional[int]:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> Optional[float]:
    kib = _status_kib("VmRSS")
    return None if kib is None else kib / 1024.0


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) so a window reports its own peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """Peak RSS since the last reset, or since the process started where resetting is refused."""
    kib = _status_kib("VmHWM")
    if kib is None:
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024.0


@dataclass
class Usage:
    wall_s: float
    cpu_s: float
    cpu_percent: float  # of one CPU; 200 % is both cores of a 2-core machine busy
    thread_cpu_s: Dict[str, float] = field(default_factory=dict)
    rss_start_mb: Optional[float] = None
    rss_end_mb: Optional[float] = None
    peak_rss_mb: Optional[float] = None
    peak_is_process_lifetime: bool = False

    @classmethod
    def combine(cls, parts: "List[Usage]") -> "Usage":
        """Several windows of the same configuration as one: times add up, the peak is the highest."""
        wall_s = sum(p.wall_s for p in parts)
        cpu_s = sum(p.cpu_s for p in parts)
        threads: Dict[str, float] = {}
        for part in parts:
            for group, seconds in part.thread_cpu_s.items():
                threads[group] = threads.get(group, 0.0) + seconds
        peaks = [p.peak_rss_mb for p in parts if p.peak_rss_mb is not None]
        return cls(
            wall_s=wall_s,
            cpu_s=cpu_s,
            cpu_percent=100.0 * cpu_s / wall_s if wall_s > 0 else 0.0,
            thread_cpu_s=threads,
            rss_start_mb=parts[0].rss_start_mb,
            rss_end_mb=parts[-1].rss_end_mb,
            peak_rss_mb=max(peaks) if peaks else None,
            peak_is_process_lifetime=any(p.peak_is_process_lifetime for p in parts),
        )

    def per_frame_ms(self, frames: int) -> Dict[str, float]:
        """CPU milliseconds per frame of each thread group, and in all."""
        if frames <= 0:
            return {}
        shares = {k: round(v * 1000.0 / frames, 2) for k, v in sorted(self.thread_cpu_s.items())}
        shares["total"] = round(self.cpu_s * 1000.0 / frames, 2)
        return shares

    def as_dict(self) -> dict:
        return {
            "wall_s": round(self.wall_s, 3),
            "cpu_s": round(self.cpu_s, 3),
            "cpu_percent": round(self.cpu_percent, 1),
            "thread_cpu_s": {k: round(v, 3) for k, v in sorted(self.thread_cpu_s.items())},
            "rss_start_mb": None if self.rss_start_mb is None else round(self.rss_start_mb, 1),
            "rss_end_mb": None if self.rss_end_mb is None else round(self.rss_end_mb, 1),
            "peak_rss_mb": None if self.peak_rss_mb is None else round(self.peak_rss_mb, 1),
            "peak_is_process_lifetime": self.peak_is_process_lifetime,
        }


class ResourceMeter:
    """``start()`` then ``stop()`` around a measuring window."""

    def __init__(self) -> None:
        self._wall_start_s = 0.0
        self._cpu_start = START
        self._rss_start_mb: Optional[float] = None
        self._peak_reset = False

    def reset_peak(self) -> None:
        """Call before the work whose peak RSS should count (e.g. before loading a model)."""
        self._peak_reset = reset_peak_rss()

    def start(self) -> None:
        self._rss_start_mb = rss_mb()
        self._cpu_start = read_cpu()
        self._wall_start_s = time.perf_counter()

    def stop(self) -> Usage:
        wall_s = time.perf_counter() - self._wall_start_s
        now = read_cpu()
        groups = thread_groups(self._cpu_start, now)
        children = child_groups(self._cpu_start, now)
        cpu_s = now.process_s - self._cpu_start.process_s + sum(children.values())
        for group, seconds in children.items():
            groups[group] = groups.get(group, 0.0) + seconds
        return Usage(
            wall_s=wall_s,
            cpu_s=cpu_s,
            cpu_percent=100.0 * cpu_s / wall_s if wall_s > 0 else 0.0,
            thread_cpu_s=groups,
            rss_start_mb=self._rss_start_mb,
            rss_end_mb=rss_mb(),
            peak_rss_mb=peak_rss_mb(),
            peak_is_process_lifetime=not self._peak_reset,
        )
