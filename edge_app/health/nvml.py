"""Discrete GPUs through NVML (``nvidia-ml-py``, imported as ``pynvml``); optional.

Without the package every GPU figure says ``unavailable: nvidia-ml-py not installed (pip install
'edge-app[nvml]')``. Each NVML call is asked on its own: a GPU that does not support one figure (encoder utilisation on a
data-centre part, say) loses that figure, not the report.
"""
from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any, Callable, List, Optional, Union

from edge_app.health.report import GpuReport, unavailable

log = logging.getLogger(__name__)

_MIB = 1024.0 * 1024.0
#: nvmlClocksEventReasons bits (nvml.h) and the names the report gives them
THROTTLE_REASONS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"), (0x80, "hw_power_brake"),
    (0x100, "display_clock"),
)
#: the reasons that mean the GPU runs slower than it should because of heat or power delivery
THROTTLING_REASONS = frozenset({"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"})
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1


def throttle_reason_names(mask: int) -> List[str]:
    return [name for bit, name in THROTTLE_REASONS if mask & bit]


def load_pynvml() -> Optional[ModuleType]:
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


class NvmlReader:
    """GPUs 0..n-1 of the host; NVML is initialised on the first read and kept."""

    def __init__(self, module: Optional[ModuleType] = None, *, load: Callable[[], Optional[ModuleType]] = load_pynvml):
        self._nvml = module if module is not None else load()
        self._ready = False
        self._init_error: Optional[str] = None

    def _init(self) -> Optional[str]:
        if self._nvml is None:
            return "nvidia-ml-py not installed (pip install 'edge-app[nvml]')"
        if not self._ready and self._init_error is None:
            try:
                self._nvml.nvmlInit()
                self._ready = True
            except Exception as err:  # NVMLError_LibraryNotFound, _DriverNotLoaded...: no NVIDIA GPU here
                self._init_error = f"NVML: {err}"
        return self._init_error

    def _ask(self, call: Callable[[], Any], convert: Callable[[Any], Any]) -> Any:
        try:
            return convert(call())
        except Exception as err:  # one figure missing (NVMLError_NotSupported...) keeps the others
            return unavailable(f"NVML: {err}")

    def read(self) -> Union[List[GpuReport], str]:
        why = self._init()
        if why is not None:
            return unavailable(why)
        nvml = self._nvml
        try:
            count = nvml.nvmlDeviceGetCount()
        except Exception as err:
            return unavailable(f"NVML: {err}")
        gpus = []
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as err:
                log.debug("NVML handle of GPU %d: %s", index, err)
                continue
            name = self._ask(lambda: nvml.nvmlDeviceGetName(handle),
                             lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
            util = self._ask(lambda: nvml.nvmlDeviceGetUtilizationRates(handle), lambda v: v)
            memory = self._ask(lambda: nvml.nvmlDeviceGetMemoryInfo(handle), lambda v: v)
            gpus.append(GpuReport(
                index=index, name=name, kind="nvml",
                load_percent=util if isinstance(util, str) else float(util.gpu),
                clock_mhz=self._ask(lambda: nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM), float),
                temperature_c=self._ask(lambda: nvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU), float),
                memory_used_mb=memory if isinstance(memory, str) else round(memory.used / _MIB, 1),
                memory_total_mb=memory if isinstance(memory, str) else round(memory.total / _MIB, 1),
                encoder_percent=self._ask(lambda: nvml.nvmlDeviceGetEncoderUtilization(handle), lambda v: float(v[0])),
                decoder_percent=self._ask(lambda: nvml.nvmlDeviceGetDecoderUtilization(handle), lambda v: float(v[0])),
                power_w=self._ask(lambda: nvml.nvmlDeviceGetPowerUsage(handle), lambda v: round(v / 1000.0, 1)),
                power_limit_w=self._ask(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle), lambda v: round(v / 1000.0, 1)),
                throttle_reasons=self._ask(lambda: nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle),
                                           throttle_reason_names),
            ))
        return gpus if gpus else unavailable("NVML sees no GPU")

    def close(self) -> None:
        if self._ready and self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._ready = False

