"""A small CUDA layer: buffers (pinned host + device), streams, async copies and NVRTC kernels.

``open_device()`` picks an adapter: cuda-python when it is installed (NVIDIA's binding, the one
TensorRT 10's samples use), else pycuda. Nothing here imports either binding at module load, so
the package imports on machines without CUDA.
"""
from __future__ import annotations

import importlib.util
import logging
from typing import Callable, Dict, List, Optional

from edge_app.cuda.base import (CudaDevice, CudaError, CudaUnavailable, DeviceBuffer, Kernel, KernelArg, Stream,
                                kernel_options_for, launch_grid_2d)

log = logging.getLogger(__name__)

__all__ = [
    "CudaDevice", "CudaError", "CudaUnavailable", "DeviceBuffer", "Kernel", "KernelArg", "Stream",
    "ADAPTERS", "available_adapters", "open_device", "kernel_options_for", "launch_grid_2d",
]


def _cuda_python(index: int) -> CudaDevice:
    from edge_app.cuda.cuda_python import CudaPythonDevice
    return CudaPythonDevice(index)


def _pycuda(index: int) -> CudaDevice:
    from edge_app.cuda.pycuda_adapter import PycudaDevice
    return PycudaDevice(index)


#: adapters in order of preference
ADAPTERS: Dict[str, Callable[[int], CudaDevice]] = {"cuda-python": _cuda_python, "pycuda": _pycuda}


def _importable(adapter: str) -> bool:
    try:
        if adapter == "cuda-python":
            return importlib.util.find_spec("cuda") is not None and (
                importlib.util.find_spec("cuda.bindings") is not None or importlib.util.find_spec("cuda.cuda") is not None)
        return importlib.util.find_spec("pycuda") is not None
    except (ImportError, ValueError):
        return False


def available_adapters() -> List[str]:
    """Names of the adapters whose Python binding is installed (no GPU access)."""
    return [name for name in ADAPTERS if _importable(name)]


def open_device(adapter: Optional[str] = None, device_index: int = 0) -> CudaDevice:
    """Open GPU ``device_index`` through ``adapter`` or, when None, the first adapter that works."""
    if adapter is not None:
        if adapter not in ADAPTERS:
            raise CudaUnavailable(f"unknown CUDA adapter {adapter!r}; use one of {', '.join(ADAPTERS)}")
        return ADAPTERS[adapter](device_index)
    problems = []
    for name in available_adapters():
        try:
            return ADAPTERS[name](device_index)
        except CudaError as err:
            problems.append(f"{name}: {err}")
    if not problems:
        raise CudaUnavailable("neither cuda-python nor pycuda is installed: pip install 'edge-app[tensorrt]' "
                               "(on JetPack 5: 'edge-app[pycuda]')")
    raise CudaUnavailable("; ".join(problems))
