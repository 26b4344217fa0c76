"""CUDA layer adapter for pycuda.

pycuda's ``autoinit`` makes a context of its own; this adapter uses the device's primary context
instead, which is the one TensorRT (through the CUDA runtime) uses, so engine and buffers share
one context. pycuda keeps a context stack per thread and aborts the process if a thread ends
with a context still pushed, and the pipeline's threads do end; so every call pushes the context
and pops it again (cheap) instead of leaving it bound. Kernels are compiled with NVRTC (through
ctypes) rather than pycuda's nvcc-based SourceModule.
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import numpy as np

from edge_app.cuda.base import (CudaDevice, CudaError, CudaUnavailable, DeviceBuffer, Kernel, KernelArg,
                                Shape, Stream, check_contiguous, shape_tuple)
from edge_app.cuda.nvrtc_lib import Nvrtc

log = logging.getLogger(__name__)

_ARG_FORMAT = {"ptr": "P", "i32": "i", "f32": "f"}


def import_pycuda() -> Any:
    try:
        import pycuda.driver as driver
    except ImportError as err:
        raise CudaUnavailable(f"pycuda is not installed ({err}): pip install 'edge-app[pycuda]'") from None
    return driver


class _Buffer(DeviceBuffer):
    def __init__(self, allocation: Any, nbytes: int):
        self._allocation, self.ptr, self.nbytes = allocation, int(allocation), nbytes

    def free(self) -> None:
        if self._allocation is not None:
            self._allocation.free()
            self._allocation = None


class _Stream(Stream):
    def __init__(self, owner: "PycudaDevice", raw: Any):
        self._owner, self.raw, self.handle = owner, raw, int(raw.handle)

    def synchronize(self) -> None:
        with self._owner.active():
            self.raw.synchronize()


class PycudaDevice(CudaDevice):
    adapter_name = "pycuda"

    def __init__(self, device_index: int = 0):
        self._cuda = import_pycuda()
        try:
            self._cuda.init()
            count = self._cuda.Device.count()
        except self._cuda.Error as err:
            raise CudaUnavailable(f"CUDA driver did not initialise: {err}") from None
        if count <= device_index:
            raise CudaUnavailable(f"no CUDA device {device_index} (found {count})")
        self._dev = self._cuda.Device(device_index)
        self._ctx = self._dev.retain_primary_context()
        self._local = threading.local()
        self._buffers: List[_Buffer] = []
        self._pinned: List[np.ndarray] = []
        self._streams: List[_Stream] = []
        self._prepared: Dict[int, Any] = {}
        self._modules: List[Any] = []
        self._nvrtc = Nvrtc.load()
        self.has_nvrtc = self._nvrtc is not None

    @property
    def name(self) -> str:
        return str(self._dev.name())

    @property
    def context_handle(self) -> int:
        return int(self._ctx.handle) if self._ctx is not None else 0

    @property
    def compute_capability(self) -> Tuple[int, int]:
        major, minor = self._dev.compute_capability()
        return int(major), int(minor)

    @property
    def driver_version(self) -> str:
        version = int(self._cuda.get_driver_version())
        return f"{version // 1000}.{(version % 1000) // 10}"

    def nvrtc_version(self) -> str:
        if self._nvrtc is None:
            return "not found"
        major, minor = self._nvrtc.version()
        return f"{major}.{minor}"

    def binding_version(self) -> str:
        import pycuda
        return str(getattr(pycuda, "VERSION_TEXT", "unknown"))

    @contextmanager
    def active(self) -> Iterator[None]:
        """The primary context pushed for the duration of a call (re-entrant per thread)."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._ctx.push()
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth -= 1
            if self._local.depth == 0:
                self._cuda.Context.pop()

    def make_current(self) -> None:
        # Nothing stays pushed (see the module docstring). TensorRT's runtime-API calls made
        # between ours find no context and use the device's primary one: the same context.
        pass

    def alloc_pinned(self, shape: Shape, dtype: Any) -> np.ndarray:
        with self.active():
            array = self._cuda.pagelocked_empty(shape_tuple(shape), dtype)
        self._pinned.append(array)
        return array

    def alloc_device(self, nbytes: int) -> DeviceBuffer:
        with self.active():
            buffer = _Buffer(self._cuda.mem_alloc(max(int(nbytes), 1)), int(nbytes))
        self._buffers.append(buffer)
        return buffer

    def create_stream(self) -> Stream:
        with self.active():
            stream = _Stream(self, self._cuda.Stream())
        self._streams.append(stream)
        return stream

    def memcpy_htod_async(self, dst_ptr: int, src: np.ndarray, stream: Stream) -> None:
        check_contiguous(src, "the host source")
        with self.active():
            self._cuda.memcpy_htod_async(int(dst_ptr), src, stream.raw)

    def memcpy_dtoh_async(self, dst: np.ndarray, src_ptr: int, stream: Stream) -> None:
        check_contiguous(dst, "the host destination")
        with self.active():
            self._cuda.memcpy_dtoh_async(dst, int(src_ptr), stream.raw)

    def memcpy_dtod_async(self, dst_ptr: int, src_ptr: int, nbytes: int, stream: Stream) -> None:
        with self.active():
            self._cuda.memcpy_dtod_async(int(dst_ptr), int(src_ptr), int(nbytes), stream.raw)

    def compile_kernel(self, source: str, name: str, options: Sequence[str] = ()) -> Kernel:
        if self._nvrtc is None:
            raise CudaError("NVRTC (libnvrtc.so) was not found, so kernels cannot be compiled")
        image = self._nvrtc.compile(source, name, options)
        with self.active():
            module = self._cuda.module_from_buffer(image)
            function = module.get_function(name)
        self._modules.append(module)
        return Kernel(name, function)

    def launch(self, kernel: Kernel, grid: Tuple[int, int, int], block: Tuple[int, int, int],
               args: Sequence[KernelArg], stream: Stream) -> None:
        signature = "".join(_ARG_FORMAT[a.kind] for a in args)
        key = id(kernel.handle)
        with self.active():
            if key not in self._prepared:
                self._prepared[key] = kernel.handle.prepare(signature)
            self._prepared[key].prepared_async_call(tuple(grid), tuple(block), stream.raw, *[a.value for a in args])

    def close(self) -> None:
        if self._ctx is None:
            return
        try:
            with self.active():
                self._cuda.Context.synchronize()
                for buffer in self._buffers:
                    buffer.free()
                for array in self._pinned:
                    allocation = array.base
                    if hasattr(allocation, "free"):
                        allocation.free()
                # streams, kernels and modules are released while the context is still current
                self._streams.clear()
                self._prepared.clear()
                self._modules.clear()
        except self._cuda.Error as err:  # a dead context cannot be cleaned any further
            log.warning("CUDA clean-up failed: %s", err)
        finally:
            self._buffers, self._pinned = [], []
            self._ctx.detach()
            self._ctx = None
