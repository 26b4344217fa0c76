"""Makes this process's CUDA layer the host-memory stand-in (``host_cuda``, NOT CUDA): for the
``edge-app run`` subprocesses of tests and benchmarks whose TensorRT is the stand-in."""
from __future__ import annotations

from typing import Any, Dict

from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice

ADAPTER = HostMemoryCudaDevice.adapter_name


def use_host_memory_cuda(identity: Dict[str, Any]) -> None:
    """Every ``open_device`` of this process, the TensorRT backend's and any other part's (the
    NVDEC probe, selftest), opens a ``HostMemoryCudaDevice(**identity)``; the stand-in is the
    only adapter listed. Call it before the appliance starts."""
    import edge_app.cuda
    from edge_app.detect.tensorrt import backend

    def open_standin(device_index: int = 0) -> HostMemoryCudaDevice:
        return HostMemoryCudaDevice(**identity)

    # a name listed must be one open_device can open: the NVDEC probe opens the first listed
    edge_app.cuda.ADAPTERS[ADAPTER] = open_standin
    edge_app.cuda.available_adapters = lambda: [ADAPTER]
    backend.open_device = open_standin
