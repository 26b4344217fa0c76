"""Device memory for decoded frames: a small pool of packed NV12 buffers.

A hardware decoder writes each picture into one of its own surfaces and reuses that surface on
a later decode, so a frame that must outlive the next decode (the pipeline holds frames while
the detector runs, snapshots and live view hold the newest one) is copied device-to-device into
a buffer of this pool first: about 3 MB for 1080p, a few microseconds on a dGPU.

A buffer goes back to the pool when the last reference to its frame is dropped (a weakref
finalizer on the frame's lease), never earlier, so a snapshot taken late still sees its own
frame. The pool grows on demand up to ``max_frames``; a pipeline that holds more frames than
that is stuck, and the source reports it as a read failure, which makes the camera reconnect.

The pool owns its CUDA device handle and closes it once the pool and every frame from it are
gone, so frames stay readable after their source is released (a reconnect).
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import List, Optional

import numpy as np

from edge_app.cuda.base import CudaDevice, DeviceBuffer, KernelArg, Kernel, kernel_options_for, launch_grid_2d
from edge_app.cuda.kernels.letterbox import KERNEL_COPY_PITCHED, SOURCE
from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
from edge_app.capture.luma_shrinker import LumaShrinker

log = logging.getLogger(__name__)

DEFAULT_MAX_FRAMES = 16


class FramePoolExhausted(RuntimeError):
    """Every frame buffer is still held by someone; the consumer is not letting frames go."""


class _Lease:
    """Holds one buffer for one frame; the buffer returns to the pool when the lease is collected."""

    def __init__(self, pool: "DeviceFramePool", buffer: DeviceBuffer) -> None:
        self.buffer = buffer
        weakref.finalize(self, pool._give_back, buffer)


class DeviceFramePool:
    """Packed NV12 frame buffers on one GPU, with a stream for copying in and one for downloads."""

    def __init__(self, device: CudaDevice, max_frames: int = DEFAULT_MAX_FRAMES, device_index: int = 0) -> None:
        if max_frames < 1:
            raise ValueError("max_frames must be at least 1")
        self.device = device
        self.device_index = device_index
        self.max_frames = int(max_frames)
        self.stream = device.create_stream()
        self._download_stream = device.create_stream()
        self._lock = threading.Lock()
        self._download_lock = threading.Lock()
        self._free: List[DeviceBuffer] = []
        self._allocated = 0
        self._copy_kernel: Optional[Kernel] = None
        self.downloads = 0
        self.shrinker = LumaShrinker(device)  # motion gating's small grey picture, made on the GPU
        weakref.finalize(self, device.close)

    @property
    def in_use(self) -> int:
        with self._lock:
            return self._allocated - len(self._free)

    def copy_in(self, surface: Nv12Planes) -> DeviceNv12Image:
        """A frame of this pool holding a copy of ``surface``; the copy is complete on return,
        so the decoder may overwrite the surface right after."""
        width, height = surface.width, surface.height
        buffer = self._acquire(surface.nbytes)
        lease = _Lease(self, buffer)
        packed = Nv12Planes(buffer.ptr, buffer.ptr + width * height, width, width, width, height)
        if surface.packed:
            self.device.memcpy_dtod_async(buffer.ptr, surface.y_ptr, surface.nbytes, self.stream)
        else:
            self._copy_rows(surface.y_ptr, surface.y_pitch, packed.y_ptr, width, height)
            self._copy_rows(surface.uv_ptr, surface.uv_pitch, packed.uv_ptr, width, height // 2)
        self.stream.synchronize()
        return DeviceNv12Image(packed, self._download, keepalive=lease, device_index=self.device_index,
                               shrink=self.shrinker)

    def _copy_rows(self, src_ptr: int, src_pitch: int, dst_ptr: int, width: int, rows: int) -> None:
        if self._copy_kernel is None:
            options = kernel_options_for(self.device.compute_capability)
            self._copy_kernel = self.device.compile_kernel(SOURCE, KERNEL_COPY_PITCHED, options)
        grid, block = launch_grid_2d(width, rows)
        args = [KernelArg.ptr(src_ptr), KernelArg.i32(src_pitch), KernelArg.ptr(dst_ptr), KernelArg.i32(width),
                KernelArg.i32(width), KernelArg.i32(rows)]
        self.device.launch(self._copy_kernel, grid, block, args, self.stream)

    def _download(self, planes: Nv12Planes, host: np.ndarray) -> None:
        # API and event threads download; the capture thread never waits for them
        with self._download_lock:
            self.device.memcpy_dtoh_async(host.reshape(-1), planes.y_ptr, self._download_stream)
            self._download_stream.synchronize()
            self.downloads += 1

    def _acquire(self, nbytes: int) -> DeviceBuffer:
        with self._lock:
            for index, buffer in enumerate(self._free):
                if buffer.nbytes >= nbytes:
                    return self._free.pop(index)
            # a resolution change leaves buffers that are too small: make room for new ones
            while self._free and self._allocated >= self.max_frames:
                self._free.pop().free()
                self._allocated -= 1
            if self._allocated >= self.max_frames:
                raise FramePoolExhausted(
                    f"all {self.max_frames} GPU frame buffers are still in use; frames are not being released")
            self._allocated += 1
        try:
            return self.device.alloc_device(nbytes)
        except Exception:
            with self._lock:
                self._allocated -= 1
            raise

    def _give_back(self, buffer: DeviceBuffer) -> None:
        with self._lock:
            self._free.append(buffer)
