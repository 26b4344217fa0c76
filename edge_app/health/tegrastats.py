"""A parser for one line of ``tegrastats`` (JetPack's own monitor), as a cross-check of the sysfs readers.

The line's layout changed between JetPack releases (``GR3D_FREQ 0%@[305]`` on Orin with
JetPack 5, ``GR3D_FREQ 0%`` on JetPack 6, ``GR3D 3%@76`` on the oldest; ``CPU@47.5C`` or
``cpu@47.5C``); the parser takes each figure where it finds it and leaves out what it does not.
``scripts/health_probe.py --tegrastats`` compares it with the report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB")
_SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB")
_CPU = re.compile(r"\bCPU \[([^\]]*)\]")
_GR3D = re.compile(r"\bGR3D(?:_FREQ)? (\d+)%")
_TEMP = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*)@(-?\d+(?:\.\d+)?)C\b")
_RAIL = re.compile(r"\b([A-Z][A-Z0-9_]+) (\d+)mW/(\d+)mW")
#: sensors that are powered off read -256 °C
_OFF_C = -200.0


@dataclass(frozen=True)
class TegrastatsSample:
    ram_used_mb: Optional[float] = None
    ram_total_mb: Optional[float] = None
    swap_used_mb: Optional[float] = None
    cpu_percent: List[Optional[float]] = field(default_factory=list)  # None for a core that is off
    gpu_load_percent: Optional[float] = None
    temperatures_c: Dict[str, float] = field(default_factory=dict)
    rails_mw: Dict[str, float] = field(default_factory=dict)  # the current reading of each rail


def parse_line(line: str) -> TegrastatsSample:
    ram = _RAM.search(line)
    swap = _SWAP.search(line)
    cpu = _CPU.search(line)
    cores: List[Optional[float]] = []
    if cpu:
        for core in cpu.group(1).split(","):
            found = re.match(r"\s*(\d+)%", core)
            cores.append(float(found.group(1)) if found else None)
    gr3d = _GR3D.search(line)
    temps = {name: float(value) for name, value in _TEMP.findall(line) if float(value) > _OFF_C}
    rails = {name: float(now) for name, now, _avg in _RAIL.findall(line) if name != "NC"}
    return TegrastatsSample(
        ram_used_mb=float(ram.group(1)) if ram else None, ram_total_mb=float(ram.group(2)) if ram else None,
        swap_used_mb=float(swap.group(1)) if swap else None, cpu_percent=cores,
        gpu_load_percent=float(gr3d.group(1)) if gr3d else None, temperatures_c=temps, rails_mw=rails)
