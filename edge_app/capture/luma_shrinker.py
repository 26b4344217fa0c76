"""The small grey picture of a device frame, made where the frame lies (``DeviceNv12Image.small_grey``).

Motion gating looks at every frame it checks; on the NVDEC path that frame is NV12 in device
memory, and copying all of it to the host (3 MB at 1080p) to scale it down there costs more than
the whole motion check. ``LumaShrinker`` runs ``edge_app.cuda.kernels.luma_shrink`` on the Y
plane instead and copies back only the small picture, into a pinned buffer kept per size (with
``blurred``, the detector's blur is done in the same launch, and the picture is float32). One
per frame owner (a ``DeviceFramePool``, the shared slots of a decoder process), on a stream of
its own, so it never waits behind a download or the letterbox.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from edge_app.capture.gpu_image import Nv12Planes
from edge_app.cuda.base import KernelArg, PackedArgs, kernel_options_for, launch_grid_2d
from edge_app.cuda.kernels.luma_shrink import BLUR_RADIUS, KERNEL_SHRINK_BLUR_LUMA, KERNEL_SHRINK_LUMA, SOURCE


@dataclass(frozen=True)
class _Launch:
    """One launch as it repeats: a camera's frames come from a few slots of one size, so the
    same arguments, grid and buffers serve every frame of a slot (on an H100 host, packing the
    dozen arguments once took the CPU of launch, copy back and wait from 35 to 24 us)."""

    kernel: Any
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    packed: PackedArgs
    buffer: Any
    host: np.ndarray
    host_flat: np.ndarray


class LumaShrinker:
    """``shrinker(planes, width_px, height_px)`` -> uint8 ``(height_px, width_px)`` on the host;
    ``shrinker.blurred(planes, width_px, height_px, taps)`` -> the same picture blurred, float32."""

    def __init__(self, device: Any) -> None:
        self._device = device
        self._lock = threading.Lock()
        self._stream: Any = None
        self._kernels: Dict[str, Any] = {}
        self._buffers: Dict[Tuple[int, int, Any], Tuple[Any, np.ndarray]] = {}
        self._launches: Dict[tuple, _Launch] = {}
        self.calls = 0

    def __call__(self, planes: Nv12Planes, width_px: int, height_px: int) -> np.ndarray:
        return self._run(KERNEL_SHRINK_LUMA, planes, width_px, height_px, ())

    def blurred(self, planes: Nv12Planes, width_px: int, height_px: int, taps: Sequence[float]) -> np.ndarray:
        """The small picture and the motion detector's blur with ``taps`` (2 x BLUR_RADIUS + 1 of
        them), in one launch: float32, as the detector works on it. A tuple of floats is taken as
        it is (the detector keeps one); anything else is read as float32 first."""
        if not isinstance(taps, tuple):
            taps = tuple(np.asarray(taps, np.float32).ravel().tolist())
        if len(taps) != 2 * BLUR_RADIUS + 1:
            raise ValueError(f"the GPU blur takes {2 * BLUR_RADIUS + 1} taps, got {len(taps)}")
        return self._run(KERNEL_SHRINK_BLUR_LUMA, planes, width_px, height_px, taps)

    def _run(self, name: str, planes: Nv12Planes, width_px: int, height_px: int, taps: Tuple[float, ...]) -> np.ndarray:
        key = (name, planes.y_ptr, planes.y_pitch, planes.width, planes.height, width_px, height_px, taps)
        with self._lock:
            launch = self._launches.get(key)
            if launch is None:
                launch = self._prepare(key)
            device, stream = self._device, self._stream
            device.launch_packed(launch.kernel, launch.grid, launch.block, launch.packed, stream)
            device.memcpy_dtoh_async(launch.host_flat, launch.buffer.ptr, stream)
            stream.synchronize()
            self.calls += 1
            return launch.host.copy()  # the pinned buffer is reused by the next call

    def _prepare(self, key: tuple) -> _Launch:
        name, y_ptr, y_pitch, width, height, width_px, height_px, taps = key
        if not (0 < width_px <= width and 0 < height_px <= height):
            raise ValueError(f"cannot shrink {width}x{height} to {width_px}x{height_px}")
        device = self._device
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = self._kernels[name] = device.compile_kernel(SOURCE, name, kernel_options_for(device.compute_capability))
        if self._stream is None:
            self._stream = device.create_stream()
        buffer, host = self._buffer(width_px, height_px, np.dtype(np.float32 if taps else np.uint8))
        # shrink_blur_luma's blocks are 32 x 8, the size its shared tiles are made for
        grid, block = launch_grid_2d(width_px, height_px)
        args = [KernelArg.ptr(y_ptr), KernelArg.i32(y_pitch), KernelArg.i32(width), KernelArg.i32(height),
                KernelArg.ptr(buffer.ptr), KernelArg.i32(width_px), KernelArg.i32(height_px),
                *[KernelArg.f32(tap) for tap in taps]]
        if len(self._launches) >= MAX_LAUNCHES:  # slots that came and went (a decoder restarted)
            self._launches.clear()
        launch = self._launches[key] = _Launch(kernel, grid, block, device.pack_args(args), buffer, host,
                                               host.reshape(-1))
        return launch

    def _buffer(self, width_px: int, height_px: int, dtype: np.dtype) -> Tuple[Any, np.ndarray]:
        kept: Optional[Tuple[Any, np.ndarray]] = self._buffers.get((width_px, height_px, dtype))
        if kept is None:
            if len(self._buffers) >= MAX_SIZES:  # a camera that changes size now and then
                for old, _ in self._buffers.values():
                    old.free()
                self._buffers.clear()
                self._launches.clear()  # they name the buffers just freed
            kept = (self._device.alloc_device(width_px * height_px * dtype.itemsize),
                    self._device.alloc_pinned((height_px, width_px), dtype))
            self._buffers[(width_px, height_px, dtype)] = kept
        return kept


#: picture sizes a shrinker keeps buffers for at once
MAX_SIZES = 4
#: launches (frame slots and sizes) a shrinker keeps packed at once
MAX_LAUNCHES = 64
