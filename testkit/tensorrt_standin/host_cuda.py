"""A host-memory stand-in for the CUDA layer (edge_app.cuda), for CPU tests. NOT CUDA.

Its "device" buffers are ordinary host memory, its copies are memmoves and its streams are
synchronous, so the TensorRT stand-in can read and write the memory behind every address.
By default it has no NVRTC, so the backend letterboxes on the CPU with it; with
``emulate_kernels=True`` it "compiles" the letterbox kernels (BGR and NV12) and the YOLO decoding
kernels into their numpy emulation (``kernel_emulation``, with ``nv12_to_bgr_reference`` in front
for NV12), so the backend's GPU preprocessing and decoding paths run without a GPU. It counts
allocations, so tests can check that running frames allocates nothing.
"""
from __future__ import annotations

import ctypes
import itertools
from typing import Any, List, Sequence, Tuple

import numpy as np

from edge_app.cuda.base import (CudaDevice, CudaError, DeviceBuffer, Kernel, KernelArg, Shape, Stream,
                                check_contiguous, shape_tuple)
from edge_app.cuda.kernels.letterbox import KERNEL_F16, KERNEL_F32, KERNEL_NV12_F16, KERNEL_NV12_F32
from edge_app.cuda.kernels.yolo_nms import KERNEL_CANDIDATES_F16, KERNEL_CANDIDATES_F32, KERNEL_NMS, ROW_VALUES
from edge_app.capture.gpu_image import nv12_to_bgr_reference
from testkit.tensorrt_standin.kernel_emulation import emulate_letterbox, emulate_yolo_candidates, emulate_yolo_nms

_KERNELS = {KERNEL_F32: np.float32, KERNEL_F16: np.float16, KERNEL_NV12_F32: np.float32, KERNEL_NV12_F16: np.float16,
            KERNEL_CANDIDATES_F32: np.float32, KERNEL_CANDIDATES_F16: np.float16, KERNEL_NMS: None}


class _HostBuffer(DeviceBuffer):
    def __init__(self, nbytes: int) -> None:
        self.array = np.zeros(max(1, nbytes), dtype=np.uint8)
        self.ptr = int(self.array.ctypes.data)
        self.nbytes = nbytes

    def free(self) -> None:
        pass


class _HostStream(Stream):
    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.synchronize_calls = 0

    def synchronize(self) -> None:
        self.synchronize_calls += 1


class HostMemoryCudaDevice(CudaDevice):
    adapter_name = "host-memory stand-in"

    def __init__(self, name: str = "host-memory stand-in (no GPU)", compute_capability: Tuple[int, int] = (0, 0),
                 emulate_kernels: bool = False) -> None:
        self._name = name
        self.has_nvrtc = emulate_kernels
        self.launches = 0
        self._cc = compute_capability
        self._handles = itertools.count(0x5000)
        self.buffers: List[_HostBuffer] = []
        self.pinned: List[np.ndarray] = []
        self.streams: List[_HostStream] = []
        self.copies = 0
        self.closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return self._cc

    @property
    def driver_version(self) -> str:
        return "none"

    @property
    def allocations(self) -> int:
        return len(self.buffers) + len(self.pinned)

    def make_current(self) -> None:
        pass

    def alloc_pinned(self, shape: Shape, dtype: Any) -> np.ndarray:
        array = np.zeros(shape_tuple(shape), dtype=dtype)
        self.pinned.append(array)
        return array

    def alloc_device(self, nbytes: int) -> DeviceBuffer:
        buffer = _HostBuffer(int(nbytes))
        self.buffers.append(buffer)
        return buffer

    def create_stream(self) -> Stream:
        stream = _HostStream(next(self._handles))
        self.streams.append(stream)
        return stream

    def _owned(self, ptr: int, nbytes: int) -> None:
        if not any(b.ptr <= ptr and ptr + nbytes <= b.ptr + max(1, b.nbytes) for b in self.buffers):
            raise CudaError(f"address {ptr:#x} (+{nbytes} bytes) is not inside a buffer of this device")

    def memcpy_htod_async(self, dst_ptr: int, src: np.ndarray, stream: Stream) -> None:
        check_contiguous(src, "the host source")
        self._owned(dst_ptr, src.nbytes)
        ctypes.memmove(dst_ptr, src.ctypes.data, src.nbytes)
        self.copies += 1

    def memcpy_dtoh_async(self, dst: np.ndarray, src_ptr: int, stream: Stream) -> None:
        check_contiguous(dst, "the host destination")
        self._owned(src_ptr, dst.nbytes)
        ctypes.memmove(dst.ctypes.data, src_ptr, dst.nbytes)
        self.copies += 1

    def memcpy_dtod_async(self, dst_ptr: int, src_ptr: int, nbytes: int, stream: Stream) -> None:
        self._owned(dst_ptr, nbytes)
        self._owned(src_ptr, nbytes)
        ctypes.memmove(dst_ptr, src_ptr, nbytes)
        self.copies += 1

    def compile_kernel(self, source: str, name: str, options: Sequence[str] = ()) -> Kernel:
        if not self.has_nvrtc or name not in _KERNELS:
            raise CudaError("the host-memory stand-in has no NVRTC")
        return Kernel(name, _KERNELS[name])

    def _rows(self, ptr: int, pitch: int, rows: int, width_bytes: int) -> np.ndarray:
        self._owned(ptr, rows * pitch)
        raw = (ctypes.c_uint8 * (rows * pitch)).from_address(ptr)
        return np.frombuffer(raw, dtype=np.uint8).reshape(rows, pitch)[:, :width_bytes]

    def launch(self, kernel: Kernel, grid, block, args: Sequence[KernelArg], stream: Stream) -> None:
        """Run the numpy emulation of the kernel on the host memory behind the pointers."""
        values = [a.value for a in args]
        self.launches += 1
        if kernel.name in (KERNEL_CANDIDATES_F32, KERNEL_CANDIDATES_F16):
            return self._candidates(kernel.handle, grid[1], *values)
        if kernel.name == KERNEL_NMS:
            return self._nms(grid[0], *values)
        if kernel.name in (KERNEL_NV12_F32, KERNEL_NV12_F16):
            (luma, luma_pitch, chroma, chroma_pitch, src_w, src_h), rest = values[:6], values[6:]
            nv12 = np.concatenate([self._rows(luma, luma_pitch, src_h, src_w),
                                   self._rows(chroma, chroma_pitch, src_h // 2, src_w)])
            image = nv12_to_bgr_reference(nv12)
        else:
            (src, src_w, src_h, pitch), rest = values[:4], values[4:]
            image = self._rows(src, pitch, src_h, src_w * 3).reshape(src_h, src_w, 3)
        (dst, dst_w, dst_h, new_w, new_h, left, top, pad) = rest
        planes = emulate_letterbox(image, (dst_h, dst_w), (new_w, new_h), (left, top), pad).astype(kernel.handle)
        self._owned(dst, planes.nbytes)
        ctypes.memmove(dst, planes.ctypes.data, planes.nbytes)

    def _array(self, ptr: int, count: int, dtype) -> np.ndarray:
        nbytes = count * np.dtype(dtype).itemsize
        self._owned(ptr, nbytes)
        return np.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=dtype)

    def _candidates(self, dtype, images, pred, anchors, classes, conf, keep_class, rows, anchor_of, counts, cap) -> None:
        preds = self._array(pred, images * (4 + classes) * anchors, dtype).reshape(images, 4 + classes, anchors)
        mask = self._array(keep_class, classes, np.uint8).astype(bool) if keep_class else None
        rows_out = self._array(rows, images * cap * ROW_VALUES, np.float32).reshape(images, cap, ROW_VALUES)
        anchors_out = self._array(anchor_of, images * cap, np.int32).reshape(images, cap)
        counts_out = self._array(counts, images, np.int32)
        for image in range(images):
            found, which, count = emulate_yolo_candidates(preds[image], conf, mask, cap)
            rows_out[image, :len(found)], anchors_out[image, :len(which)] = found, which
            counts_out[image] += count

    def _nms(self, images, rows, anchor_of, counts, cap, iou_threshold, max_det, kept_rows, kept) -> None:
        rows_in = self._array(rows, images * cap * ROW_VALUES, np.float32).reshape(images, cap, ROW_VALUES)
        anchors_in = self._array(anchor_of, images * cap, np.int32).reshape(images, cap)
        counts_in = self._array(counts, images, np.int32)
        out = self._array(kept_rows, images * max_det * ROW_VALUES, np.float32).reshape(images, max_det, ROW_VALUES)
        kept_out = self._array(kept, images, np.int32)
        for image in range(images):
            n = int(counts_in[image])
            result = emulate_yolo_nms(rows_in[image, :min(n, cap)], anchors_in[image, :min(n, cap)], n, cap,
                                      iou_threshold, max_det)
            kept_out[image] = -1 if result is None else len(result)
            if result is not None:
                out[image, :len(result)] = result

    def close(self) -> None:
        self.closed = True
