"""Jetson figures from sysfs and JetPack's files: the integrated GPU, the nvpmodel power mode, INA3221 rails.

Paths (Jetson Linux developer guide, "Platform Power and Performance"; jetson_stats):
* GPU load in per mille at ``/sys/devices/17000000.ga10b/load`` (Orin, JetPack 5),
  ``/sys/devices/platform/bus@0/17000000.gpu/load`` (JetPack 6) or ``/sys/devices/gpu.0/load``
  (older modules); its clock in Hz at ``/sys/class/devfreq/<gpu>/cur_freq``.
* The power mode: ``/var/lib/nvpmodel/status`` (``pmode:0002 ...``) named by the
  ``< POWER_MODEL ID=2 NAME=15W >`` lines of ``/etc/nvpmodel.conf``; without the status file,
  ``nvpmodel -q`` (``NV Power Mode: 15W`` then the id).
* Rails: ``/sys/bus/i2c/drivers/ina3221/<bus-addr>/hwmon/hwmon*/in<N>_label`` with
  ``in<N>_input`` (mV) and ``curr<N>_input`` (mA); ``ina3221x`` on older kernels.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple, Union

from edge_app.health.files import read_int, read_text, sorted_glob, under
from edge_app.health.report import Figure, GpuReport, PowerRail, PowerReport, unavailable

GPU_LOAD_PATTERNS = ("sys/devices/*.ga10b/load", "sys/devices/platform/bus@0/*.gpu/load",
                     "sys/devices/platform/*.gpu/load", "sys/devices/gpu.0/load", "sys/devices/platform/gpu.0/load")
_GPU_DEVFREQ = re.compile(r"(ga10b|gv11b|gp10b|gpu)", re.IGNORECASE)
_POWER_MODEL = re.compile(r"<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=([^\s>]+)")
_STATUS_MODE = re.compile(r"pmode:\s*(\d+)")
_QUERY_NAME = re.compile(r"NV Power Mode:\s*(\S+)")
#: ``nvpmodel -q`` runs at most this often: a power mode changes rarely and the command costs a process
QUERY_EVERY_S = 60.0
QUERY_TIMEOUT_S = 2.0


def is_jetson(root: Path) -> bool:
    return under(root, "etc/nv_tegra_release").exists() or "jetson" in (model_name(root) or "").lower()


def model_name(root: Path) -> Optional[str]:
    text = read_text(under(root, "proc/device-tree/model"))
    return text.replace("\x00", "").strip() if text else None


class JetsonGpuReader:
    """The integrated GPU; the sysfs files are found once and kept."""

    def __init__(self, root: Path):
        self._root = root
        self._load_path: Optional[Path] = None
        self._freq_path: Optional[Path] = None
        self._found = False

    def _find(self) -> None:
        for pattern in GPU_LOAD_PATTERNS:
            matches = sorted_glob(self._root, pattern)
            if matches:
                self._load_path = matches[0]
                break
        for freq in sorted_glob(self._root, "sys/class/devfreq/*/cur_freq"):
            if _GPU_DEVFREQ.search(freq.parent.name):
                self._freq_path = freq
                break
        self._found = True

    def read(self, temperature_c: Figure) -> List[GpuReport]:
        if not self._found:
            self._find()
        load = read_int(self._load_path) if self._load_path else None
        freq_hz = read_int(self._freq_path) if self._freq_path else None
        shared = unavailable("shared with the CPU (see memory)")
        none = unavailable("not reported by an integrated GPU")
        return [GpuReport(
            index=0, name=model_name(self._root) or "Jetson", kind="jetson",
            load_percent=load / 10.0 if load is not None else unavailable("no GPU load file found"),
            clock_mhz=round(freq_hz / 1e6, 1) if freq_hz is not None else unavailable("no GPU devfreq found"),
            temperature_c=temperature_c, memory_used_mb=shared, memory_total_mb=shared,
            encoder_percent=none, decoder_percent=none,
            power_w=none, power_limit_w=none, throttle_reasons=none)]


def parse_nvpmodel_conf(text: str) -> dict:
    """``{mode id: name}`` from ``/etc/nvpmodel.conf``."""
    return {int(i): name for i, name in _POWER_MODEL.findall(text)}


def parse_nvpmodel_query(text: str) -> Tuple[Optional[str], Optional[int]]:
    """(name, id) from the output of ``nvpmodel -q``; warnings around it are ignored."""
    name = _QUERY_NAME.search(text)
    mode_id = None
    lines = [line.strip() for line in text.splitlines()]
    for index, line in enumerate(lines):
        if _QUERY_NAME.search(line):
            following = next((candidate for candidate in lines[index + 1:] if candidate), "")
            mode_id = int(following) if following.isdigit() else None
    return (name.group(1) if name else None), mode_id


def run_nvpmodel_query() -> Optional[str]:
    if shutil.which("nvpmodel") is None:
        return None
    try:
        done = subprocess.run(["nvpmodel", "-q"], capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


class PowerModeReader:
    """The nvpmodel mode: the status file when JetPack writes one, else ``nvpmodel -q`` once a minute."""

    def __init__(self, root: Path, query: Optional[Callable[[], Optional[str]]] = None,
                 clock: Callable[[], float] = time.monotonic):
        self._root = root
        self._query = query if query is not None else (run_nvpmodel_query if str(root) == "/" else (lambda: None))
        self._clock = clock
        self._queried: Optional[Tuple[float, Tuple[Optional[str], Optional[int]]]] = None

    def read(self) -> Tuple[Figure, Figure]:
        names = parse_nvpmodel_conf(read_text(under(self._root, "etc/nvpmodel.conf")) or "")
        status = read_text(under(self._root, "var/lib/nvpmodel/status"))
        found = _STATUS_MODE.search(status or "")
        if found:
            mode_id = int(found.group(1))
            return names.get(mode_id, unavailable(f"mode {mode_id} not in nvpmodel.conf")), float(mode_id)
        now = self._clock()
        if self._queried is None or now - self._queried[0] >= QUERY_EVERY_S:
            output = self._query()
            self._queried = (now, parse_nvpmodel_query(output) if output else (None, None))
        name, mode_id = self._queried[1]
        if name is None and mode_id is None:
            return unavailable("no nvpmodel status (not a Jetson, or nvpmodel missing)"), unavailable("no nvpmodel status")
        if name is None and mode_id is not None:
            name = names.get(mode_id)
        return (name if name is not None else unavailable("unnamed mode"),
                float(mode_id) if mode_id is not None else unavailable("no mode id"))


def read_rails(root: Path) -> Union[List[PowerRail], str]:
    rails = []
    for hwmon in sorted_glob(root, "sys/bus/i2c/drivers/ina3221*/*/hwmon/hwmon*"):
        for label_file in sorted_glob(hwmon, "in*_label"):
            channel = label_file.name[2:-len("_label")]
            label = read_text(label_file)
            if not channel.isdigit() or not label or label.upper() == "NC" or not (hwmon / f"curr{channel}_input").exists():
                continue
            millivolts = read_int(hwmon / f"in{channel}_input")
            milliamps = read_int(hwmon / f"curr{channel}_input")
            volts: Figure = millivolts / 1000.0 if millivolts is not None else unavailable("voltage not readable")
            amps: Figure = milliamps / 1000.0 if milliamps is not None else unavailable("current not readable")
            watts: Figure = (round(volts * amps, 3) if isinstance(volts, float) and isinstance(amps, float)
                             else unavailable("voltage or current not readable"))
            rails.append(PowerRail(label, volts, amps, watts))
    return rails if rails else unavailable("no INA3221 power monitor")


def power_report(rails: Union[List[PowerRail], str], mode: Figure, mode_id: Figure) -> PowerReport:
    total: Figure
    if isinstance(rails, str):
        total = rails
    else:
        main = [r for r in rails if r.name.upper() in ("VDD_IN", "POM_5V_IN", "5V_IN") and isinstance(r.power_w, float)]
        powers = [r.power_w for r in rails if isinstance(r.power_w, float)]
        total = round(main[0].power_w, 3) if main else (round(sum(powers), 3) if powers else unavailable("no rail readable"))
    return PowerReport(mode=mode, mode_id=mode_id, rails=rails, total_w=total)
