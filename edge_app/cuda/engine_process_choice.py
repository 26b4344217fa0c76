"""``model.engine_process: auto``: whether the TensorRT engine runs in a process of its own.

The engine process is fed through CUDA IPC and pays off only when its CUDA context runs beside
the appliance's and the decoders' at once, which is what NVIDIA MPS does: on an H200 test machine
with 8 NVDEC cameras the default reached 0.50 of the engine's own throughput, the engine process
with MPS 0.80-0.90 (docs/gpu-benchmark.md). So ``auto`` turns it on for a discrete GPU whose MPS
daemon answers, and off on a Jetson (its CUDA has no IPC between processes) and without MPS
(contexts would take turns on the GPU). ``true`` and ``false`` are obeyed as written.

:func:`choose` is pure: the facts of the host are passed in (:func:`host_facts` reads them).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from edge_app.cuda.mps import mps_status

TEGRA_RELEASE = Path("/etc/nv_tegra_release")
DEVICE_TREE_COMPATIBLE = Path("/proc/device-tree/compatible")


@dataclass(frozen=True)
class HostFacts:
    jetson: bool
    mps_running: bool
    mps_pipe_directory: str


@dataclass(frozen=True)
class EngineProcessChoice:
    enabled: bool
    reason: str


def is_jetson(tegra_release: Path = TEGRA_RELEASE, compatible: Path = DEVICE_TREE_COMPATIBLE) -> bool:
    """L4T writes ``/etc/nv_tegra_release``; every Tegra's device tree says ``nvidia,tegra...``."""
    if tegra_release.exists():
        return True
    try:
        return b"nvidia,tegra" in compatible.read_bytes()
    except OSError:
        return False


def host_facts(jetson: Optional[bool] = None) -> HostFacts:
    mps = mps_status()
    return HostFacts(is_jetson() if jetson is None else jetson, mps.running, str(mps.pipe_directory))


def choose(setting: Union[str, bool], facts: HostFacts) -> EngineProcessChoice:
    if setting is True:
        return EngineProcessChoice(True, "model.engine_process is true")
    if setting is False:
        return EngineProcessChoice(False, "model.engine_process is false")
    if facts.jetson:
        return EngineProcessChoice(False, "auto: off on a Jetson, whose CUDA shares no memory between processes")
    if not facts.mps_running:
        return EngineProcessChoice(False, f"auto: off, NVIDIA MPS is not running (no daemon answers in "
                                          f"{facts.mps_pipe_directory}); the engine process would take turns on the "
                                          "GPU; start systemd/edge-app-mps.service to turn it on")
    return EngineProcessChoice(True, "auto: on, a discrete GPU with NVIDIA MPS running")
