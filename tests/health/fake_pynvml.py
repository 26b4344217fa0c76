"""A stand-in for the ``pynvml`` module (nvidia-ml-py) so the NVML reader runs in CI without a GPU.

It is not NVML: it implements only the documented pynvml functions the reader calls
(``nvmlInit``, ``nvmlShutdown``, ``nvmlDeviceGetCount``, ``nvmlDeviceGetHandleByIndex``,
``nvmlDeviceGetName``, ``nvmlDeviceGetTemperature``, ``nvmlDeviceGetCurrentClocksThrottleReasons``,
``nvmlDeviceGetPowerUsage``, ``nvmlDeviceGetEnforcedPowerLimit``, ``nvmlDeviceGetUtilizationRates``,
``nvmlDeviceGetEncoderUtilization``, ``nvmlDeviceGetDecoderUtilization``, ``nvmlDeviceGetMemoryInfo``,
``nvmlDeviceGetClockInfo``) with the units and return shapes of nvidia-ml-py's documentation:
milliwatts, bytes, percent, ``[utilization, sampling period µs]``, a reasons bit mask. The real
library runs on the GPU test machine (``scripts/health_probe.py``, docs/gpu-verification.md).
"""
from __future__ import annotations

import threading
import types
from dataclasses import dataclass, field
from typing import Dict, List, Optional

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    def __str__(self) -> str:
        return "Not Supported"


class NVMLError_LibraryNotFound(NVMLError):
    def __str__(self) -> str:
        return "NVML Shared Library Not Found"


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    temperature_c: int = 41
    throttle_mask: int = 0x1  # gpu_idle
    power_mw: int = 118_000
    power_limit_mw: int = 700_000
    util_gpu: int = 37
    util_memory: int = 12
    encoder: Optional[int] = 0  # None: not supported on this part
    decoder: int = 54
    memory_used_b: int = 3 * 1024 ** 3
    memory_total_b: int = 143_771 * 1024 ** 2
    sm_clock_mhz: int = 1980


@dataclass
class FakeNvml:
    gpus: List[FakeGpu] = field(default_factory=lambda: [FakeGpu()])
    library_missing: bool = False
    block: Optional[threading.Event] = None  # set: every call waits for it (a hung driver)
    calls: Dict[str, int] = field(default_factory=dict)

    def module(self) -> types.ModuleType:
        mod = types.ModuleType("pynvml")
        mod.NVMLError = NVMLError
        mod.NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
        mod.NVML_CLOCK_SM = NVML_CLOCK_SM

        def call(name, fn):
            def wrapped(*args):
                self.calls[name] = self.calls.get(name, 0) + 1
                if self.block is not None:
                    self.block.wait()
                return fn(*args)
            setattr(mod, name, wrapped)

        def init():
            if self.library_missing:
                raise NVMLError_LibraryNotFound()

        def encoder(h):
            if h.encoder is None:
                raise NVMLError_NotSupported()
            return [h.encoder, 167_000]

        call("nvmlInit", init)
        call("nvmlShutdown", lambda: None)
        call("nvmlDeviceGetCount", lambda: len(self.gpus))
        call("nvmlDeviceGetHandleByIndex", lambda i: self.gpus[i])
        call("nvmlDeviceGetName", lambda h: h.name)
        call("nvmlDeviceGetTemperature", lambda h, sensor: h.temperature_c)
        call("nvmlDeviceGetCurrentClocksThrottleReasons", lambda h: h.throttle_mask)
        call("nvmlDeviceGetPowerUsage", lambda h: h.power_mw)
        call("nvmlDeviceGetEnforcedPowerLimit", lambda h: h.power_limit_mw)
        call("nvmlDeviceGetUtilizationRates", lambda h: types.SimpleNamespace(gpu=h.util_gpu, memory=h.util_memory))
        call("nvmlDeviceGetEncoderUtilization", encoder)
        call("nvmlDeviceGetDecoderUtilization", lambda h: [h.decoder, 167_000])
        call("nvmlDeviceGetMemoryInfo", lambda h: types.SimpleNamespace(used=h.memory_used_b, total=h.memory_total_b,
                                                                        free=h.memory_total_b - h.memory_used_b))
        call("nvmlDeviceGetClockInfo", lambda h, clock: h.sm_clock_mhz)
        return mod
