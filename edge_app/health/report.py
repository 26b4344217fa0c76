"""The device health report (``GET /api/v1/health/device``, ``R/health``) as typed dataclasses.

Every figure is either a value, with its unit in the field's name, or a string
``"unavailable: <why>"``: a box without a fan, an NVML that is not installed or a sysfs file
that hung says so instead of failing or guessing. A whole section can be unavailable the same way.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Union

UNAVAILABLE = "unavailable: "

#: a number, or ``"unavailable: <why>"``
Figure = Union[float, str]


def unavailable(why: str) -> str:
    return UNAVAILABLE + why


def is_unavailable(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(UNAVAILABLE)


def number(value: Any) -> Optional[float]:
    """The figure as a float, None when it is unavailable."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class TripPoint:
    type: str  # passive, active, hot, critical
    temperature_c: float


@dataclass(frozen=True)
class ThermalZone:
    name: str
    temperature_c: Figure
    trip_points: List[TripPoint] = field(default_factory=list)

    @property
    def throttle_c(self) -> Optional[float]:
        """The lowest passive trip point: above it the kernel slows the clocks down."""
        passive = [t.temperature_c for t in self.trip_points if t.type == "passive"]
        return min(passive) if passive else None


@dataclass(frozen=True)
class FanReport:
    pwm_percent: Figure
    rpm: Figure


@dataclass(frozen=True)
class ThermalReport:
    zones: List[ThermalZone]
    max_temperature_c: Figure
    throttling: Union[bool, str]  # now: a zone past its passive trip point, or an over-current event
    throttle_events: int  # times throttling began since the appliance started
    over_current_events: Figure  # soctherm over-current events counted by the kernel since start
    fan: Union[FanReport, str]


@dataclass(frozen=True)
class CpuReport:
    cores: int
    load_1m: Figure
    load_percent: Figure  # busy share of all cores since the previous sample
    freq_mhz: Figure  # mean current clock of the online cores
    temperature_c: Figure


@dataclass(frozen=True)
class MemoryReport:
    total_mb: float
    used_mb: float
    used_percent: float
    swap_used_mb: Figure
    shared_with_gpu: bool  # Jetson: the GPU allocates from this memory


@dataclass(frozen=True)
class DiskReport:
    path: str  # as configured: the state directory ".", events.dir, ...
    total_mb: Figure
    free_mb: Figure
    used_percent: Figure


@dataclass(frozen=True)
class GpuReport:
    index: int
    name: str
    kind: str  # "jetson" (integrated, sysfs) or "nvml" (discrete)
    load_percent: Figure
    clock_mhz: Figure
    temperature_c: Figure
    memory_used_mb: Figure
    memory_total_mb: Figure
    encoder_percent: Figure
    decoder_percent: Figure
    power_w: Figure
    power_limit_w: Figure
    throttle_reasons: Union[List[str], str] = field(default_factory=list)


@dataclass(frozen=True)
class PowerRail:
    name: str
    voltage_v: Figure
    current_a: Figure
    power_w: Figure


@dataclass(frozen=True)
class PowerReport:
    mode: Figure  # the nvpmodel power mode by name ("15W", "MAXN"); unavailable off a Jetson
    mode_id: Figure
    rails: Union[List[PowerRail], str]
    total_w: Figure  # VDD_IN where the module has it, else the rails summed


@dataclass(frozen=True)
class Problem:
    """One limit crossed. ``kind`` is what the fleet filters by: hot, throttling, disk_full, memory_full."""

    kind: str
    subject: str  # the zone, GPU or directory concerned
    message: str
    value: Optional[float] = None
    limit: Optional[float] = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.subject}"


@dataclass(frozen=True)
class HealthSummary:
    """The main figures in one flat object (null when unavailable): Home Assistant, the fleet and the banner read it."""

    temperature_c: Optional[float] = None  # the hottest thermal zone or GPU
    gpu_load_percent: Optional[float] = None  # the busiest GPU
    disk_used_percent: Optional[float] = None  # the fullest of the watched directories
    memory_used_percent: Optional[float] = None
    power_mode: Optional[str] = None
    power_w: Optional[float] = None
    throttling: bool = False


@dataclass(frozen=True)
class HealthReport:
    ts: float  # Unix seconds of the sample
    uptime_s: Figure  # of the host
    problems: List[Problem]
    cpu: Union[CpuReport, str]
    memory: Union[MemoryReport, str]
    disk: Union[List[DiskReport], str]
    gpu: Union[List[GpuReport], str]
    thermal: Union[ThermalReport, str]
    power: Union[PowerReport, str]
    summary: HealthSummary = field(default_factory=HealthSummary)
    sample_ms: float = 0.0  # how long the sample took

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def not_sampled_yet(ts: float) -> HealthReport:
    """What the report says before the first sample (the API may be asked at once)."""
    why = unavailable("not sampled yet")
    return HealthReport(ts=ts, uptime_s=why, problems=[], cpu=why, memory=why, disk=why, gpu=why, thermal=why,
                        power=why)


def _largest(values: List[Any]) -> Optional[float]:
    found = [number(v) for v in values if number(v) is not None]
    return max(found) if found else None  # type: ignore[type-var]


def summarise(report: HealthReport) -> HealthSummary:
    gpus = report.gpu if isinstance(report.gpu, list) else []
    thermal = report.thermal if isinstance(report.thermal, ThermalReport) else None
    temps = [thermal.max_temperature_c] if thermal else []
    temps += [g.temperature_c for g in gpus]
    power = report.power if isinstance(report.power, PowerReport) else None
    memory = report.memory if isinstance(report.memory, MemoryReport) else None
    throttling = bool(thermal and thermal.throttling is True) or any(p.kind == "throttling" for p in report.problems)
    return HealthSummary(
        temperature_c=_largest(temps), gpu_load_percent=_largest([g.load_percent for g in gpus]),
        disk_used_percent=_largest([d.used_percent for d in report.disk] if isinstance(report.disk, list) else []),
        memory_used_percent=memory.used_percent if memory else None,
        power_mode=power.mode if power and isinstance(power.mode, str) and not is_unavailable(power.mode) else None,
        power_w=number(power.total_w) if power else None, throttling=throttling)
