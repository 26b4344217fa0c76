"""CUDA layer adapter for NVIDIA's cuda-python (the binding TensorRT 10's samples use).

New releases expose ``cuda.bindings.driver``; releases before 12.6 only ``cuda.cuda``. The driver
API is used with the device's primary context, which is the one TensorRT (runtime API) uses too.
"""
from __future__ import annotations

import ctypes
import logging
import struct
import threading
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.cuda.base import (CudaDevice, CudaError, CudaUnavailable, DeviceBuffer, Kernel, KernelArg,
                                PackedArgs, Shape, Stream, check_contiguous, nbytes_of, shape_tuple)
from edge_app.cuda.gil_held_calls import GilHeldCalls, load as load_gil_held_calls

log = logging.getLogger(__name__)

#: each kernel argument in an 8-byte cell of one buffer (struct formats, padded)
_ARG_CELLS = {"ptr": "Q", "i32": "i4x", "f32": "f4x"}
_CELL_BYTES = 8


def kernel_params(args: Sequence[KernelArg]) -> Tuple[Any, Any]:
    """(cells, pointers) for cuLaunchKernel's ``kernelParams``: ``pointers[i]`` is the address of
    argument i's bytes in ``cells``. Both must stay alive until the launch returns.

    One ``struct.pack`` for all arguments: a numpy array per argument cost about six times as
    much, and the letterbox launches once per frame.
    """
    count = len(args)
    packed = struct.pack("=" + "".join(_ARG_CELLS[a.kind] for a in args), *[a.value for a in args])
    cells = ctypes.create_string_buffer(packed, _CELL_BYTES * count)
    base = ctypes.addressof(cells)
    pointers = (ctypes.c_uint64 * count)(*range(base, base + _CELL_BYTES * count, _CELL_BYTES))
    return cells, pointers


def import_bindings() -> Tuple[Any, Any]:
    """(driver, nvrtc) modules of whichever cuda-python layout is installed."""
    try:
        from cuda.bindings import driver, nvrtc  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import cuda as driver, nvrtc  # older releases
        except ImportError as err:
            raise CudaUnavailable(f"cuda-python is not installed ({err}): pip install 'edge-app[tensorrt]' "
                                  "(on a Jetson, the cuda-python of its CUDA version: docs/jetson.md)") from None
    return driver, nvrtc


def binding_version() -> str:
    try:
        from cuda import bindings
        return str(getattr(bindings, "__version__", "unknown"))
    except ImportError:
        import cuda
        return str(getattr(cuda, "__version__", "unknown"))


class _Buffer(DeviceBuffer):
    def __init__(self, owner: "CudaPythonDevice", ptr: Any, nbytes: int):
        self._owner, self._raw, self.ptr, self.nbytes = owner, ptr, int(ptr), nbytes

    def free(self) -> None:
        if self._raw is not None:
            self._owner._call("cuMemFree", self._raw)
            self._raw = None


class _Stream(Stream):
    def __init__(self, owner: "CudaPythonDevice", raw: Any):
        self._owner, self.raw, self.handle = owner, raw, int(raw)

    def synchronize(self) -> None:
        self._owner._call("cuStreamSynchronize", self.raw)


class CudaPythonDevice(CudaDevice):
    adapter_name = "cuda-python"

    def __init__(self, device_index: int = 0):
        self._driver, self._nvrtc = import_bindings()
        self._local = threading.local()
        self._pinned: List[int] = []
        self._buffers: List[_Buffer] = []
        self._streams: List[_Stream] = []
        self._modules: List[Any] = []
        self._ctx = None
        self._held: Optional[GilHeldCalls] = None
        try:
            self._call("cuInit", 0)
        except CudaError as err:
            raise CudaUnavailable(f"CUDA driver did not initialise: {err}") from None
        except Exception as err:  # new bindings raise their own error when libcuda.so is missing
            raise CudaUnavailable(f"CUDA driver not found ({type(err).__name__}: {err})") from None
        (count,) = self._call("cuDeviceGetCount")
        if count <= device_index:
            raise CudaUnavailable(f"no CUDA device {device_index} (found {count})")
        (self._dev,) = self._call("cuDeviceGet", device_index)
        self._prefer_blocking_sync()
        (self._ctx,) = self._call("cuDevicePrimaryCtxRetain", self._dev)
        self.make_current()
        (raw_name,) = self._call("cuDeviceGetName", 256, self._dev)
        self._name = raw_name.split(b"\0", 1)[0].decode(errors="replace")
        attr = self._driver.CUdevice_attribute
        (major,) = self._call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self._dev)
        (minor,) = self._call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self._dev)
        self._cc = (int(major), int(minor))
        (version,) = self._call("cuDriverGetVersion")
        self._driver_version = f"{version // 1000}.{(version % 1000) // 10}"
        self.has_nvrtc = self._probe_nvrtc()
        self._held = load_gil_held_calls()

    def _prefer_blocking_sync(self) -> None:
        """Threads waiting on the GPU sleep instead of spinning.

        CUDA's default lets a waiting thread spin on a core, which on an edge device takes the
        CPU that capture and publishing need, and counted a core per waiting thread on a dGPU
        host. A process that set up the context before us keeps its own choice.
        """
        try:
            self._call("cuDevicePrimaryCtxSetFlags", self._dev, self._driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC)
        except CudaError as err:
            log.debug("CUDA context scheduling left as it was: %s", err)

    def _probe_nvrtc(self) -> bool:
        try:
            self._nvrtc_call("nvrtcVersion")
            return True
        except Exception as err:  # libnvrtc missing: the bindings raise their own loader error
            log.info("NVRTC is not usable through cuda-python: %s", err)
            return False

    # -- plumbing ---------------------------------------------------------------------------
    def _call(self, fn: str, *args: Any) -> Tuple[Any, ...]:
        """Call a driver function and turn its (error, *results) tuple into results or a CudaError."""
        result = getattr(self._driver, fn)(*args)
        err, rest = result[0], tuple(result[1:])
        if err != self._driver.CUresult.CUDA_SUCCESS:
            self._call_failed(fn, err)
        return rest

    def _call_failed(self, fn: str, err: Any) -> None:
        _, text = self._driver.cuGetErrorString(err)
        raise CudaError(f"{fn} failed: {text.decode(errors='replace') if text else err}")

    def _nvrtc_call(self, fn: str, *args: Any) -> Tuple[Any, ...]:
        result = getattr(self._nvrtc, fn)(*args)
        err, rest = result[0], tuple(result[1:])
        if err != self._nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, text = self._nvrtc.nvrtcGetErrorString(err)
            raise CudaError(f"{fn} failed: {text.decode(errors='replace') if text else err}")
        return rest

    # -- properties -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return self._cc

    @property
    def driver_version(self) -> str:
        return self._driver_version

    @property
    def context_handle(self) -> int:
        return int(self._ctx) if self._ctx is not None else 0

    def nvrtc_version(self) -> str:
        if not self.has_nvrtc:
            return "not found"
        major, minor = self._nvrtc_call("nvrtcVersion")
        return f"{major}.{minor}"

    def binding_version(self) -> str:
        return binding_version()

    @property
    def queueing_calls_keep_gil(self) -> bool:
        """Launches and asynchronous copies keep Python's lock (``gil_held_calls``)."""
        return self._held is not None

    def describe(self) -> dict:
        return {**super().describe(), "queueing_calls_keep_gil": self.queueing_calls_keep_gil}

    # -- context, memory, streams -------------------------------------------------------------
    def make_current(self) -> None:
        if getattr(self._local, "bound", False):
            return
        self._call("cuCtxSetCurrent", self._ctx)
        self._local.bound = True

    def alloc_pinned(self, shape: Shape, dtype: Any) -> np.ndarray:
        self.make_current()
        nbytes = max(nbytes_of(shape, dtype), 1)
        (address,) = self._call("cuMemHostAlloc", nbytes, 0)
        self._pinned.append(int(address))
        raw = (ctypes.c_uint8 * nbytes).from_address(int(address))
        count = nbytes_of(shape, dtype) // np.dtype(dtype).itemsize
        return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape_tuple(shape))

    def alloc_device(self, nbytes: int) -> DeviceBuffer:
        self.make_current()
        (ptr,) = self._call("cuMemAlloc", max(int(nbytes), 1))
        buffer = _Buffer(self, ptr, int(nbytes))
        self._buffers.append(buffer)
        return buffer

    def create_stream(self) -> Stream:
        self.make_current()
        (raw,) = self._call("cuStreamCreate", 0)
        stream = _Stream(self, raw)
        self._streams.append(stream)
        return stream

    def _queue(self, fn: str, held: Any, *args: Any) -> None:
        """A call that only queues work: through ``gil_held_calls`` where loaded, else cuda-python."""
        if held is None:
            self._call(fn, *args)
            return
        err = held(*[a if isinstance(a, int) else int(a) for a in args])
        if err:
            self._call_failed(fn, self._driver.CUresult(err))

    def memcpy_htod_async(self, dst_ptr: int, src: np.ndarray, stream: Stream) -> None:
        check_contiguous(src, "the host source")
        self.make_current()
        held = self._held.memcpy_htod if self._held else None
        self._queue("cuMemcpyHtoDAsync", held, int(dst_ptr), src.ctypes.data, src.nbytes, stream.raw)

    def memcpy_dtoh_async(self, dst: np.ndarray, src_ptr: int, stream: Stream) -> None:
        check_contiguous(dst, "the host destination")
        self.make_current()
        held = self._held.memcpy_dtoh if self._held else None
        self._queue("cuMemcpyDtoHAsync", held, dst.ctypes.data, int(src_ptr), dst.nbytes, stream.raw)

    def memcpy_dtod_async(self, dst_ptr: int, src_ptr: int, nbytes: int, stream: Stream) -> None:
        self.make_current()
        held = self._held.memcpy_dtod if self._held else None
        self._queue("cuMemcpyDtoDAsync", held, int(dst_ptr), int(src_ptr), int(nbytes), stream.raw)

    # -- memory shared with other processes ---------------------------------------------------
    def ipc_export(self, buffer: DeviceBuffer) -> bytes:
        self.make_current()
        (handle,) = self._call("cuIpcGetMemHandle", int(buffer.ptr))
        return bytes(bytearray(int(b) & 0xFF for b in handle.reserved))

    def ipc_open(self, handle: bytes) -> int:
        self.make_current()
        raw = self._driver.CUipcMemHandle()
        raw.reserved = bytes(handle)
        flags = self._driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        (ptr,) = self._call("cuIpcOpenMemHandle", raw, flags)
        return int(ptr)

    def ipc_close(self, ptr: int) -> None:
        self.make_current()
        self._call("cuIpcCloseMemHandle", self._driver.CUdeviceptr(int(ptr)))

    # -- kernels ------------------------------------------------------------------------------
    def compile_kernel(self, source: str, name: str, options: Sequence[str] = ()) -> Kernel:
        if not self.has_nvrtc:
            raise CudaError("NVRTC is not available, so kernels cannot be compiled")
        self.make_current()
        (prog,) = self._nvrtc_call("nvrtcCreateProgram", source.encode(), f"{name}.cu".encode(), 0, [], [])
        try:
            opts = [o.encode() for o in options]
            err = self._nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
            if err != self._nvrtc.nvrtcResult.NVRTC_SUCCESS:
                (size,) = self._nvrtc_call("nvrtcGetProgramLogSize", prog)
                text = b" " * size
                self._nvrtc_call("nvrtcGetProgramLog", prog, text)
                raise CudaError(f"NVRTC could not compile {name}: {text.decode(errors='replace').strip()}")
            (size,) = self._nvrtc_call("nvrtcGetCUBINSize", prog)
            image = b" " * size
            self._nvrtc_call("nvrtcGetCUBIN", prog, image)
        finally:
            self._nvrtc.nvrtcDestroyProgram(prog)
        # the driver reads the image through a raw pointer, so hand it a buffer that outlives the call
        holder = np.frombuffer(image, dtype=np.uint8).copy()
        (module,) = self._call("cuModuleLoadData", holder.ctypes.data)
        self._modules.append(module)
        (function,) = self._call("cuModuleGetFunction", module, name.encode())
        return Kernel(name, function)

    def launch(self, kernel: Kernel, grid: Tuple[int, int, int], block: Tuple[int, int, int],
               args: Sequence[KernelArg], stream: Stream) -> None:
        self.make_current()
        cells, pointers = kernel_params(args)  # both alive until the driver has read them, in the call
        held = self._held.launch if self._held else None
        self._queue("cuLaunchKernel", held, kernel.handle, *grid, *block, 0, stream.raw, ctypes.addressof(pointers), 0)

    def pack_args(self, args: Sequence[KernelArg]) -> PackedArgs:
        return PackedArgs(tuple(args), kernel_params(args))  # the cells live as long as the PackedArgs

    def launch_packed(self, kernel: Kernel, grid: Tuple[int, int, int], block: Tuple[int, int, int],
                      packed: PackedArgs, stream: Stream) -> None:
        if packed.native is None:  # packed by another adapter
            self.launch(kernel, grid, block, packed.args, stream)
            return
        self.make_current()
        held = self._held.launch if self._held else None
        self._queue("cuLaunchKernel", held, kernel.handle, *grid, *block, 0, stream.raw,
                    ctypes.addressof(packed.native[1]), 0)

    def close(self) -> None:
        if self._ctx is None:
            return
        try:
            self._call("cuCtxSetCurrent", self._ctx)
            for stream in self._streams:
                self._call("cuStreamSynchronize", stream.raw)
                self._call("cuStreamDestroy", stream.raw)
            for buffer in self._buffers:
                buffer.free()
            for address in self._pinned:
                self._call("cuMemFreeHost", address)
            for module in self._modules:
                self._call("cuModuleUnload", module)
        finally:
            self._streams, self._buffers, self._pinned, self._modules = [], [], [], []
            self._driver.cuDevicePrimaryCtxRelease(self._dev)
            self._ctx = None
