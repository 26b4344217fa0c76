"""The small grey picture of a device frame, made where the frame lies (``DeviceNv12Image.small_grey``).

Motion gating looks at every frame it checks; on the NVDEC path that frame is NV12 in device
memory, and copying all of it to the host (3 MB at 1080p) to scale it down there costs more than
the whole motion check. ``LumaShrinker`` runs ``edge_app.cuda.kernels.luma_shrink`` on the Y
plane instead and copies back only the small picture, into a pinned buffer kept per size. One
per frame owner (a ``DeviceFramePool``, the shared slots of a decoder process), on a stream of
its own, so it never waits behind a download or the letterbox.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple

import numpy as np

from edge_app.capture.gpu_image import Nv12Planes
from edge_app.cuda.base import KernelArg, kernel_options_for, launch_grid_2d
from edge_app.cuda.kernels.luma_shrink import KERNEL_SHRINK_LUMA, SOURCE


class LumaShrinker:
    """``shrinker(planes, width_px, height_px)`` -> uint8 ``(height_px, width_px)`` on the host."""

    def __init__(self, device: Any) -> None:
        self._device = device
        self._lock = threading.Lock()
        self._stream: Any = None
        self._kernel: Any = None
        self._buffers: Dict[Tuple[int, int], Tuple[Any, np.ndarray]] = {}
        self.calls = 0

    def __call__(self, planes: Nv12Planes, width_px: int, height_px: int) -> np.ndarray:
        if not (0 < width_px <= planes.width and 0 < height_px <= planes.height):
            raise ValueError(f"cannot shrink {planes.width}x{planes.height} to {width_px}x{height_px}")
        with self._lock:
            device = self._device
            if self._kernel is None:
                self._kernel = device.compile_kernel(SOURCE, KERNEL_SHRINK_LUMA,
                                                     kernel_options_for(device.compute_capability))
                self._stream = device.create_stream()
            buffer, host = self._buffer(width_px, height_px)
            grid, block = launch_grid_2d(width_px, height_px)
            args = [KernelArg.ptr(planes.y_ptr), KernelArg.i32(planes.y_pitch), KernelArg.i32(planes.width),
                    KernelArg.i32(planes.height), KernelArg.ptr(buffer.ptr), KernelArg.i32(width_px),
                    KernelArg.i32(height_px)]
            device.launch(self._kernel, grid, block, args, self._stream)
            device.memcpy_dtoh_async(host.reshape(-1), buffer.ptr, self._stream)
            self._stream.synchronize()
            self.calls += 1
            return host.copy()  # the pinned buffer is reused by the next call

    def _buffer(self, width_px: int, height_px: int) -> Tuple[Any, np.ndarray]:
        kept: Optional[Tuple[Any, np.ndarray]] = self._buffers.get((width_px, height_px))
        if kept is None:
            if len(self._buffers) >= MAX_SIZES:  # a camera that changes size now and then
                for old, _ in self._buffers.values():
                    old.free()
                self._buffers.clear()
            kept = (self._device.alloc_device(width_px * height_px),
                    self._device.alloc_pinned((height_px, width_px), np.uint8))
            self._buffers[(width_px, height_px)] = kept
        return kept


#: picture sizes a shrinker keeps buffers for at once
MAX_SIZES = 4
