"""The CUDA layer's contract: one GPU, its pinned and device memory, streams, copies and kernels.

The TensorRT backend and the GPU preprocessing are written against :class:`CudaDevice` only, so
they never see which Python binding is installed. Two short adapters implement it: cuda-python
(NVIDIA's own bindings, used by the TensorRT 10 samples) and pycuda (named by the product card).
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np

Shape = Union[int, Sequence[int]]


class CudaError(RuntimeError):
    """A CUDA call failed; the message names the call and CUDA's own error text."""


class CudaUnavailable(CudaError):
    """No usable CUDA binding or no GPU on this machine."""


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument with its C type, so each adapter can pack it the way its binding wants."""

    kind: str  # "ptr" (device pointer), "i32" or "f32"
    value: Union[int, float]

    @classmethod
    def ptr(cls, address: int) -> "KernelArg":
        return cls("ptr", int(address))

    @classmethod
    def i32(cls, value: int) -> "KernelArg":
        return cls("i32", int(value))

    @classmethod
    def f32(cls, value: float) -> "KernelArg":
        return cls("f32", float(value))


class DeviceBuffer(abc.ABC):
    """A block of device memory; ``ptr`` is its address as an int (what TensorRT wants)."""

    ptr: int
    nbytes: int

    @abc.abstractmethod
    def free(self) -> None:
        ...


class Stream(abc.ABC):
    """A CUDA stream; ``handle`` is the raw ``cudaStream_t`` as an int."""

    handle: int

    @abc.abstractmethod
    def synchronize(self) -> None:
        ...


@dataclass
class Kernel:
    """A compiled kernel; ``handle`` is the adapter's own function object."""

    name: str
    handle: Any


@dataclass(frozen=True)
class PackedArgs:
    """Kernel arguments packed once for a launch that repeats them (``CudaDevice.launch_packed``).

    Making a dozen arguments costs about 10 us in Python, and a kernel run on every frame of a
    camera gets the same ones again and again.
    """

    args: Tuple[KernelArg, ...]
    native: Any = None  # the adapter's own packing, where it has one


def launch_grid_2d(width: int, height: int, block: Tuple[int, int] = (32, 8)) -> Tuple[Tuple[int, int, int], Tuple[int, int, int]]:
    """(grid, block) covering a width x height image with one thread per pixel."""
    bx, by = block
    return ((width + bx - 1) // bx, (height + by - 1) // by, 1), (bx, by, 1)


class CudaDevice(abc.ABC):
    """One GPU with a context bound to whichever thread uses it.

    Pinned host arrays and device buffers live until :meth:`close`; callers allocate them once
    (at model load) and reuse them for every frame.
    """

    adapter_name: str = ""
    #: True when kernels can be compiled at run time (NVRTC found)
    has_nvrtc: bool = False

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The GPU's marketing name, e.g. 'Orin' or 'NVIDIA H200'."""

    @property
    @abc.abstractmethod
    def compute_capability(self) -> Tuple[int, int]:
        ...

    @property
    @abc.abstractmethod
    def driver_version(self) -> str:
        """The CUDA version the driver supports, e.g. '12.6'."""

    @property
    def context_handle(self) -> int:
        """The raw ``CUcontext`` (the device's primary context) as an int, for libraries such as
        video decoders that take one; 0 where the adapter cannot tell."""
        return 0

    def nvrtc_version(self) -> str:
        """NVRTC's version, or 'not found'."""
        return "not found"

    def binding_version(self) -> str:
        """Version of the Python binding behind this adapter."""
        return "unknown"

    @abc.abstractmethod
    def make_current(self) -> None:
        """Bind this device's context to the calling thread (cheap when it already is)."""

    @abc.abstractmethod
    def alloc_pinned(self, shape: Shape, dtype: Any) -> np.ndarray:
        """A page-locked host array, so copies to and from the GPU can run asynchronously."""

    @abc.abstractmethod
    def alloc_device(self, nbytes: int) -> DeviceBuffer:
        ...

    @abc.abstractmethod
    def create_stream(self) -> Stream:
        ...

    @abc.abstractmethod
    def memcpy_htod_async(self, dst_ptr: int, src: np.ndarray, stream: Stream) -> None:
        """Copy all of ``src`` (contiguous, ideally pinned) to ``dst_ptr`` on ``stream``."""

    @abc.abstractmethod
    def memcpy_dtoh_async(self, dst: np.ndarray, src_ptr: int, stream: Stream) -> None:
        """Copy ``dst.nbytes`` from ``src_ptr`` into ``dst`` (contiguous, ideally pinned)."""

    @abc.abstractmethod
    def memcpy_dtod_async(self, dst_ptr: int, src_ptr: int, nbytes: int, stream: Stream) -> None:
        ...

    @abc.abstractmethod
    def compile_kernel(self, source: str, name: str, options: Sequence[str] = ()) -> Kernel:
        """Compile CUDA C++ ``source`` with NVRTC for this GPU and return the kernel ``name``."""

    @abc.abstractmethod
    def launch(self, kernel: Kernel, grid: Tuple[int, int, int], block: Tuple[int, int, int],
               args: Sequence[KernelArg], stream: Stream) -> None:
        ...

    def pack_args(self, args: Sequence[KernelArg]) -> PackedArgs:
        """``args`` packed for ``launch_packed``, which may use them for as many launches as it likes."""
        return PackedArgs(tuple(args))

    def launch_packed(self, kernel: Kernel, grid: Tuple[int, int, int], block: Tuple[int, int, int],
                      packed: PackedArgs, stream: Stream) -> None:
        """``launch`` with arguments packed once (``pack_args``)."""
        self.launch(kernel, grid, block, packed.args, stream)

    def ipc_export(self, buffer: DeviceBuffer) -> bytes:
        """A handle another process on this machine can open to reach ``buffer`` (CUDA IPC)."""
        raise CudaError(f"the {self.adapter_name} adapter cannot share device memory between processes")

    def ipc_open(self, handle: bytes) -> int:
        """The address, in this process, of memory another process exported with ``ipc_export``."""
        raise CudaError(f"the {self.adapter_name} adapter cannot share device memory between processes")

    def ipc_close(self, ptr: int) -> None:
        """Unmap memory opened with ``ipc_open``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Free every buffer this device handed out and release the context."""

    def describe(self) -> Dict[str, Any]:
        major, minor = self.compute_capability
        return {
            "adapter": self.adapter_name,
            "gpu": self.name,
            "compute_capability": f"{major}.{minor}",
            "binding_version": self.binding_version(),
            "driver_cuda_version": self.driver_version,
            "nvrtc": self.has_nvrtc,
        }

    def __enter__(self) -> "CudaDevice":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_contiguous(array: np.ndarray, what: str) -> None:
    if not array.flags["C_CONTIGUOUS"]:
        raise CudaError(f"{what} must be a C-contiguous array for a raw copy")


def shape_tuple(shape: Shape) -> Tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def nbytes_of(shape: Shape, dtype: Any) -> int:
    count = 1
    for dim in shape_tuple(shape):
        count *= dim
    return count * np.dtype(dtype).itemsize


def kernel_options_for(compute_capability: Tuple[int, int], extra: Sequence[str] = ()) -> List[str]:
    """NVRTC options compiling straight to this GPU's machine code (no PTX JIT at load)."""
    major, minor = compute_capability
    return [f"--gpu-architecture=sm_{major}{minor}", *extra]
