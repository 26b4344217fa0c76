"""The one thread that samples device health (``health:sampler``) and keeps the latest report.

Every ``health.interval_s`` it runs the readers (each with a deadline, :mod:`edge_app.health.guard`),
assembles a :class:`HealthReport`, finds its problems against ``health.limits``, logs a line
when the problem set changes, and hands the report to ``on_publish`` every ``health.publish_s``
and at once when the problems change. The API reads :meth:`HealthSampler.latest`: a request
never waits for a reader.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from edge_app.config.schema import AppConfig, HealthConfig
from edge_app.health import host, jetson, thermal
from edge_app.health.guard import GuardedReaders
from edge_app.health.nvml import NvmlReader
from edge_app.health.problems import ProblemLog, find_problems
from edge_app.process.worker import WorkerThread
from edge_app.health.report import (CpuReport, Figure, HealthReport, ThermalReport, ThermalZone, is_unavailable,
                                    not_sampled_yet, summarise, unavailable)

log = logging.getLogger(__name__)

SAMPLER_THREAD = "health:sampler"
#: one deadline for all readers of a sample; sysfs answers in microseconds, NVML in milliseconds
READER_TIMEOUT_S = 2.0


class ThrottleTracker:
    """Throttle events since start: times throttling began, plus over-current events the kernel counted."""

    def __init__(self) -> None:
        self._was_throttling = False
        self._transitions = 0
        self._oc_first: Optional[int] = None
        self._oc_last: Optional[int] = None

    def update(self, zones_throttling: bool, oc_events: Optional[int]) -> tuple:
        """(throttling now, throttle events since start, over-current events since start or why not)."""
        oc_new = False
        if oc_events is not None:
            if self._oc_first is None or oc_events < (self._oc_last or 0):  # a counter reset: count from here
                self._oc_first = oc_events
            oc_new = self._oc_last is not None and oc_events > self._oc_last
            self._oc_last = oc_events
        throttling = zones_throttling or oc_new
        if throttling and not self._was_throttling:
            self._transitions += 1
        self._was_throttling = throttling
        over_current: Figure = (float(oc_events - self._oc_first) if oc_events is not None and self._oc_first is not None
                                else unavailable("no over-current counters (soctherm_oc)"))
        return throttling, self._transitions, over_current


class HealthSampler:
    """Samples under ``root`` (``/``, or a synthetic tree in tests); disk paths relative to ``base``."""

    def __init__(self, config: HealthConfig, disk_paths: Sequence[str], *, root: Path = Path("/"),
                 base: Path = Path("."), nvml: Optional[NvmlReader] = None,
                 on_publish: Optional[Callable[[HealthReport], None]] = None,
                 timeout_s: float = READER_TIMEOUT_S, extra_readers: Optional[Dict[str, Callable[[], Any]]] = None,
                 problem_log: Optional[ProblemLog] = None, power_mode: Optional[jetson.PowerModeReader] = None):
        self._config = config
        self._disk_paths = list(disk_paths)
        self._root = root
        self._base = base
        self._on_publish = on_publish
        self.jetson = jetson.is_jetson(root)
        self._cpu = host.CpuReader(root)
        self._jetson_gpu = jetson.JetsonGpuReader(root) if self.jetson else None
        self._nvml = None if self.jetson else (nvml if nvml is not None else NvmlReader())
        self._power_mode = power_mode or jetson.PowerModeReader(root)
        self._guard = GuardedReaders(timeout_s)
        self._extra = dict(extra_readers or {})  # tests add a reader that hangs
        self._throttle = ThrottleTracker()
        self._problems = problem_log or ProblemLog()
        self._lock = threading.Lock()
        self._latest = not_sampled_yet(time.time())
        self._next_publish_mono_s = 0.0
        self._worker = WorkerThread(self._loop, SAMPLER_THREAD)
        self.samples = 0

    # -- lifecycle
    def start(self) -> None:
        self._worker.start()

    def stop(self, timeout_s: float = 1.0) -> None:
        self._worker.stop(timeout_s)
        if self._nvml is not None:
            self._nvml.close()

    def set_publisher(self, on_publish: Optional[Callable[[HealthReport], None]]) -> None:
        """Where each report due for publishing goes (``R/health``); set before :meth:`start`."""
        self._on_publish = on_publish

    def configure(self, config: HealthConfig, disk_paths: Sequence[str]) -> None:
        """A changed configuration: the next sample uses it (the wait in progress keeps its length)."""
        with self._lock:
            self._config, self._disk_paths = config, list(disk_paths)

    def latest(self) -> HealthReport:
        with self._lock:
            return self._latest

    def _loop(self) -> None:
        while not self._worker.stopping.is_set():
            try:
                self.sample()
            except Exception:  # the sampler must outlive any surprise in a report
                log.exception("sampling device health failed")
            with self._lock:
                interval_s = self._config.interval_s
            self._worker.stopping.wait(interval_s)

    # -- one sample
    def _readers(self, disk_paths: List[str]) -> Dict[str, Callable[[], Any]]:
        root = self._root
        readers: Dict[str, Callable[[], Any]] = {
            "thermal": lambda: (thermal.read_zones(root), thermal.read_fan(root), thermal.over_current_events(root)),
            "cpu": lambda: self._cpu.read(unavailable("no CPU temperature sensor")),
            "memory": lambda: host.read_memory(root, shared_with_gpu=self.jetson),
            "disk": lambda: host.read_disks(disk_paths, self._base),
            "uptime": lambda: host.read_uptime(root),
            "power_mode": self._power_mode.read,
            "rails": lambda: jetson.read_rails(root),
        }
        if self._nvml is not None:
            readers["gpu"] = self._nvml.read
        if self._jetson_gpu is not None:
            jetson_gpu = self._jetson_gpu
            readers["gpu"] = lambda: jetson_gpu.read(unavailable("no GPU thermal zone"))
        readers.update(self._extra)
        return readers

    def sample(self) -> HealthReport:
        """Take one sample now (the thread's work; benchmarks and tests call it directly)."""
        started_s = time.perf_counter()
        with self._lock:
            config, disk_paths = self._config, list(self._disk_paths)
        found = self._guard.run(self._readers(disk_paths))
        report = self._assemble(found)
        problems = find_problems(report, config.limits)
        report = dataclasses.replace(report, problems=problems)
        report = dataclasses.replace(report, summary=summarise(report),
                                     sample_ms=round((time.perf_counter() - started_s) * 1000.0, 2))
        changed = self._problems.note(problems)
        now_s = time.monotonic()
        with self._lock:
            self._latest = report
            due = changed or now_s >= self._next_publish_mono_s
            if due:
                self._next_publish_mono_s = now_s + config.publish_s
        self.samples += 1
        if due and self._on_publish is not None:
            try:
                self._on_publish(report)
            except Exception:
                log.exception("publishing device health failed")
        return report

    def _assemble(self, found: Dict[str, Any]) -> HealthReport:
        zones: List[ThermalZone] = []
        thermal_section: Union[ThermalReport, str]
        raw = found["thermal"]
        if is_unavailable(raw):
            thermal_section = raw
        else:
            zones, fan, oc_events = raw
            hot = thermal.throttling_zones(zones)
            throttling, events, over_current = self._throttle.update(bool(hot), oc_events)
            temps = [z.temperature_c for z in zones if isinstance(z.temperature_c, float)]
            thermal_section = ThermalReport(
                zones=zones, max_temperature_c=max(temps) if temps else unavailable("no thermal zone readable"),
                throttling=throttling, throttle_events=events, over_current_events=over_current, fan=fan)
        cpu = found["cpu"]
        if isinstance(cpu, CpuReport):
            cpu = dataclasses.replace(cpu, temperature_c=thermal.cpu_temperature(self._root, zones))
        gpu = found.get("gpu", unavailable("no GPU reader"))
        if self._jetson_gpu is not None and isinstance(gpu, list):
            gpu_temp = next((z.temperature_c for z in zones if z.name.lower().startswith("gpu")), None)
            if gpu_temp is not None:
                gpu = [dataclasses.replace(g, temperature_c=gpu_temp) for g in gpu]
        power_mode = found["power_mode"]
        mode, mode_id = power_mode if isinstance(power_mode, tuple) else (power_mode, power_mode)
        return HealthReport(ts=round(time.time(), 3), uptime_s=found["uptime"], problems=[], cpu=cpu,
                            memory=found["memory"], disk=found["disk"], gpu=gpu, thermal=thermal_section,
                            power=jetson.power_report(found["rails"], mode, mode_id))


def health_dirs(config: AppConfig) -> List[str]:
    """Directories whose disk space device health watches: the state directory, events, recordings."""
    dirs = [".", config.events.dir]
    record = getattr(config, "record", None)  # recordings, where the configuration has them
    if record is not None and getattr(record, "dir", None):
        dirs.append(record.dir)
    return dirs
