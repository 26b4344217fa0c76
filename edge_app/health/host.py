"""Every host: CPU load, clocks and temperature, memory, disk space of given directories, uptime.

From procfs (``/proc/loadavg``, ``/proc/stat``, ``/proc/meminfo``, ``/proc/uptime``), cpufreq
(``/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq``, kHz) and ``edge_app.health.free_space``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from edge_app.health.files import read_int, read_text, sorted_glob, under
from edge_app.health.free_space import disk_space
from edge_app.health.report import CpuReport, DiskReport, Figure, MemoryReport, unavailable

_MB = 1024.0 * 1024.0


class CpuReader:
    """Load and clocks; the busy share is measured between two samples (``/proc/stat``)."""

    def __init__(self, root: Path):
        self._root = root
        self._previous: Optional[Tuple[int, int]] = None  # (busy, total) jiffies

    def _busy_total(self) -> Optional[Tuple[int, int]]:
        text = read_text(under(self._root, "proc/stat"))
        first = text.splitlines()[0].split() if text else []
        if len(first) < 5 or first[0] != "cpu":
            return None
        values = [int(v) for v in first[1:] if v.isdigit()]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        # guest and guest_nice are already inside user and nice
        total = sum(values[:8])
        return total - idle, total

    def read(self, temperature_c: Figure) -> CpuReport:
        cores = len(sorted_glob(self._root, "sys/devices/system/cpu/cpu[0-9]*")) or (os.cpu_count() or 1)
        loadavg = read_text(under(self._root, "proc/loadavg"))
        load_1m: Figure = float(loadavg.split()[0]) if loadavg else unavailable("no /proc/loadavg")
        now = self._busy_total()
        load_percent: Figure = unavailable("measured from the second sample on")
        if now is None:
            load_percent = unavailable("no /proc/stat")
        elif self._previous is not None and now[1] > self._previous[1]:
            load_percent = round(100.0 * (now[0] - self._previous[0]) / (now[1] - self._previous[1]), 1)
        self._previous = now if now is not None else self._previous
        freqs = [read_int(p) for p in sorted_glob(self._root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")]
        known = [f for f in freqs if f]
        freq: Figure = round(sum(known) / len(known) / 1000.0, 1) if known else unavailable("no cpufreq")
        return CpuReport(cores=cores, load_1m=load_1m, load_percent=load_percent, freq_mhz=freq,
                         temperature_c=temperature_c)


def parse_meminfo(text: str) -> Dict[str, int]:
    """``{key: kB}`` of ``/proc/meminfo``."""
    found = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            found[key.strip()] = int(parts[0])
    return found


def read_memory(root: Path, shared_with_gpu: bool) -> Union[MemoryReport, str]:
    info = parse_meminfo(read_text(under(root, "proc/meminfo")) or "")
    if "MemTotal" not in info or "MemAvailable" not in info or info["MemTotal"] <= 0:
        return unavailable("no MemTotal/MemAvailable in /proc/meminfo")
    total_kb, available_kb = info["MemTotal"], info["MemAvailable"]
    used_kb = max(0, total_kb - available_kb)
    swap: Figure = (round((info["SwapTotal"] - info.get("SwapFree", 0)) / 1024.0, 1) if "SwapTotal" in info
                    else unavailable("no swap figures"))
    return MemoryReport(total_mb=round(total_kb / 1024.0, 1), used_mb=round(used_kb / 1024.0, 1),
                        used_percent=round(100.0 * used_kb / total_kb, 1), swap_used_mb=swap,
                        shared_with_gpu=shared_with_gpu)


def read_disk(path: str, base: Path) -> DiskReport:
    """Space of the file system holding ``path`` (relative to ``base``), as ``df`` counts it."""
    try:
        space = disk_space(base / path)
    except OSError as err:
        why = unavailable(f"{err.strerror or err}")
        return DiskReport(path, why, why, why)
    percent: Figure = (round(space.used_percent, 1) if space.used_bytes + space.free_bytes
                       else unavailable("empty file system"))
    return DiskReport(path, round(space.total_bytes / _MB, 1), round(space.free_bytes / _MB, 1), percent)


def read_disks(paths: Sequence[str], base: Path) -> List[DiskReport]:
    return [read_disk(path, base) for path in dict.fromkeys(paths)]


def read_uptime(root: Path) -> Figure:
    text = read_text(under(root, "proc/uptime"))
    try:
        return float(text.split()[0]) if text else unavailable("no /proc/uptime")
    except ValueError:
        return unavailable("unreadable /proc/uptime")
