"""Thermal zones with their trip points, the fan, and Jetson over-current (soctherm) counters.

Paths (Linux thermal and hwmon ABI, Jetson Linux developer guide "Thermal Management"):
``/sys/class/thermal/thermal_zone*/{type,temp,trip_point_*_type,trip_point_*_temp}`` in
millidegrees Celsius; the fan as hwmon ``pwmfan`` (``pwm1``, 0..255) with its tachometer as
hwmon ``pwm_tach`` (``rpm``), or a generic ``fan1_input``; Orin's over-current events as hwmon
``soctherm_oc`` (``oc*_event_cnt``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Union

from edge_app.health.files import hwmon_named, read_int, read_text, sorted_glob
from edge_app.health.report import FanReport, Figure, ThermalZone, TripPoint, unavailable

#: Jetson sensors that are powered off (a CV cluster, the GPU rail-gated) read -256 °C.
SENSOR_OFF_BELOW_C = -200.0
#: zones that do not measure the chip: PMIC-Die reads a fixed 100 °C on older modules
IGNORED_ZONES = frozenset({"PMIC-Die"})
_TRIP = re.compile(r"trip_point_(\d+)_type$")


def _trip_points(zone: Path) -> List[TripPoint]:
    trips = []
    for type_file in sorted_glob(zone, "trip_point_*_type"):
        found = _TRIP.search(type_file.name)
        kind = read_text(type_file)
        temp = read_int(zone / f"trip_point_{found.group(1)}_temp") if found else None
        # Disabled trips read as huge or negative values on some kernels: not a limit anyone meets.
        if kind and temp is not None and -50_000 < temp < 200_000:
            trips.append(TripPoint(kind, temp / 1000.0))
    return trips


def read_zones(root: Path) -> List[ThermalZone]:
    zones = []
    for zone in sorted_glob(root, "sys/class/thermal/thermal_zone*"):
        name = read_text(zone / "type") or zone.name
        if name in IGNORED_ZONES:
            continue
        milli = read_int(zone / "temp")
        temperature: Figure
        if milli is None:
            temperature = unavailable("temp not readable")
        elif milli / 1000.0 < SENSOR_OFF_BELOW_C:
            temperature = unavailable("sensor powered off")
        else:
            temperature = milli / 1000.0
        zones.append(ThermalZone(name, temperature, _trip_points(zone)))
    return zones


def read_fan(root: Path) -> Union[FanReport, str]:
    pwm: Figure = unavailable("no pwm fan")
    rpm: Figure = unavailable("no tachometer")
    for hwmon in hwmon_named(root, "pwmfan", "pwm-fan"):
        value = read_int(hwmon / "pwm1")
        if value is not None:
            pwm = round(value * 100.0 / 255.0, 1)
            break
    for hwmon in hwmon_named(root, "pwm_tach", "pwmfan", "pwm-fan"):
        value = read_int(hwmon / "rpm")
        if value is None:
            value = read_int(hwmon / "fan1_input")
        if value is not None:
            rpm = float(value)
            break
    if isinstance(pwm, str) and isinstance(rpm, str):
        return unavailable("no fan found")
    return FanReport(pwm, rpm)


def over_current_events(root: Path) -> Optional[int]:
    """The kernel's count of over-current throttle events (Orin ``soctherm_oc``); None without it."""
    counts = [read_int(path) for hwmon in hwmon_named(root, "soctherm_oc")
              for path in sorted_glob(hwmon, "oc*_event_cnt")]
    found = [c for c in counts if c is not None]
    return sum(found) if found else None


def throttling_zones(zones: List[ThermalZone]) -> List[ThermalZone]:
    """Zones at or past their lowest passive trip point: the kernel is slowing the clocks down."""
    hot = []
    for zone in zones:
        limit = zone.throttle_c
        if limit is not None and isinstance(zone.temperature_c, float) and zone.temperature_c >= limit:
            hot.append(zone)
    return hot


def cpu_temperature(root: Path, zones: List[ThermalZone]) -> Figure:
    """The CPU's zone (Jetson ``CPU-therm``, x86 ``x86_pkg_temp``), else hwmon coretemp/k10temp."""
    for zone in zones:
        if isinstance(zone.temperature_c, float) and (zone.name.lower().startswith("cpu") or zone.name == "x86_pkg_temp"):
            return zone.temperature_c
    for hwmon in hwmon_named(root, "coretemp", "k10temp", "zenpower", "cpu_thermal"):
        milli = read_int(hwmon / "temp1_input")
        if milli is not None:
            return milli / 1000.0
    return unavailable("no CPU temperature sensor")
