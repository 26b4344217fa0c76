"""Prometheus metric families of a device health report, units in their names (``/metrics``).

A figure that is unavailable has no sample: an absent series says "unknown", a zero would lie.
"""
from __future__ import annotations

from typing import Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from edge_app.health.problems import PROBLEM_KINDS
from edge_app.health.report import (CpuReport, FanReport, HealthReport, MemoryReport, PowerReport, ThermalReport,
                                    number)

PREFIX = "edge_app_health"
_MB = 1024.0 * 1024.0


def _gauge(name: str, doc: str, value) -> Iterator[Metric]:
    if number(value) is not None:
        yield GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=number(value))


def health_metrics(report: HealthReport) -> Iterator[Metric]:
    problems = GaugeMetricFamily(f"{PREFIX}_problem", "1 while a problem of this kind is present (docs/health.md)",
                                 labels=["kind"])
    kinds = {p.kind for p in report.problems}
    for kind in PROBLEM_KINDS:
        problems.add_metric([kind], 1.0 if kind in kinds else 0.0)
    yield problems
    yield from _gauge("host_uptime_seconds", "Seconds since the host booted", report.uptime_s)
    yield from _thermal(report)
    if isinstance(report.cpu, CpuReport):
        yield from _gauge("cpu_load_percent", "Busy share of all CPU cores between two samples", report.cpu.load_percent)
        yield from _gauge("cpu_load1", "One-minute load average", report.cpu.load_1m)
        yield from _gauge("cpu_frequency_megahertz", "Mean current clock of the online cores", report.cpu.freq_mhz)
        yield from _gauge("cpu_temperature_celsius", "CPU temperature", report.cpu.temperature_c)
    if isinstance(report.memory, MemoryReport):
        yield from _gauge("memory_used_bytes", "Memory in use (total minus available)", report.memory.used_mb * _MB)
        yield from _gauge("memory_used_percent", "Memory in use, percent of the total", report.memory.used_percent)
    yield from _disks(report)
    yield from _gpus(report)
    yield from _power(report)


def _thermal(report: HealthReport) -> Iterator[Metric]:
    thermal = report.thermal
    if not isinstance(thermal, ThermalReport):
        return
    zones = GaugeMetricFamily(f"{PREFIX}_temperature_celsius", "Temperature of each thermal zone", labels=["zone"])
    for zone in thermal.zones:
        if number(zone.temperature_c) is not None:
            zones.add_metric([zone.name], number(zone.temperature_c))
    yield zones
    yield GaugeMetricFamily(f"{PREFIX}_throttling", "1 while the clocks are throttled for heat or power",
                            value=1.0 if thermal.throttling is True else 0.0)
    yield CounterMetricFamily(f"{PREFIX}_throttle_events", "Times throttling began since the appliance started",
                              value=thermal.throttle_events)
    if isinstance(thermal.fan, FanReport):
        yield from _gauge("fan_pwm_percent", "Fan drive, percent", thermal.fan.pwm_percent)
        yield from _gauge("fan_speed_rpm", "Fan speed", thermal.fan.rpm)


def _disks(report: HealthReport) -> Iterator[Metric]:
    if not isinstance(report.disk, list):
        return
    used = GaugeMetricFamily(f"{PREFIX}_disk_used_percent", "File system use of a watched directory, as df",
                             labels=["path"])
    free = GaugeMetricFamily(f"{PREFIX}_disk_free_bytes", "Space left for the appliance", labels=["path"])
    for disk in report.disk:
        if number(disk.used_percent) is not None:
            used.add_metric([disk.path], number(disk.used_percent))
        if number(disk.free_mb) is not None:
            free.add_metric([disk.path], number(disk.free_mb) * _MB)
    yield used
    yield free


def _gpus(report: HealthReport) -> Iterator[Metric]:
    if not isinstance(report.gpu, list):
        return
    families = (
        ("gpu_load_percent", "GPU utilisation", "load_percent", 1.0),
        ("gpu_temperature_celsius", "GPU temperature", "temperature_c", 1.0),
        ("gpu_clock_megahertz", "GPU (SM) clock", "clock_mhz", 1.0),
        ("gpu_memory_used_bytes", "GPU memory in use (discrete GPUs)", "memory_used_mb", _MB),
        ("gpu_encoder_percent", "NVENC utilisation", "encoder_percent", 1.0),
        ("gpu_decoder_percent", "NVDEC utilisation", "decoder_percent", 1.0),
        ("gpu_power_watts", "GPU power draw", "power_w", 1.0),
        ("gpu_power_limit_watts", "GPU power limit in force", "power_limit_w", 1.0),
    )
    for name, doc, field_name, scale in families:
        family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=["gpu"])
        for gpu in report.gpu:
            value = number(getattr(gpu, field_name))
            if value is not None:
                family.add_metric([str(gpu.index)], value * scale)
        if family.samples:
            yield family


def _power(report: HealthReport) -> Iterator[Metric]:
    power = report.power
    if not isinstance(power, PowerReport):
        return
    yield from _gauge("power_watts", "Board power: VDD_IN where the module has it, else the rails summed", power.total_w)
    yield from _gauge("power_mode_id", "nvpmodel power mode id", power.mode_id)
    if isinstance(power.rails, list):
        rails = GaugeMetricFamily(f"{PREFIX}_rail_power_watts", "Power of each INA3221 rail", labels=["rail"])
        for rail in power.rails:
            if number(rail.power_w) is not None:
                rails.add_metric([rail.name], number(rail.power_w))
        yield rails
