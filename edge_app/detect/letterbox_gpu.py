"""GPU letterboxing: BGR frames -> the engine's input tensor, with one kernel launch per frame.

The frame is copied to the GPU as uint8 (a third of the bytes of the float tensor) and the
kernel in ``kernels.letterbox`` does resize, padding, BGR->RGB, /255 and HWC->CHW, writing
straight into the device buffer the engine reads. Geometry comes from the CPU letterbox module,
so both paths place a frame identically.
"""
from __future__ import annotations

import logging
from typing import List, Optional, Sequence, Tuple

import numpy as np

from edge_app.cuda.base import CudaDevice, DeviceBuffer, KernelArg, Stream, kernel_options_for, launch_grid_2d
from edge_app.cuda.kernels.letterbox import KERNEL_F16, KERNEL_F32, SOURCE
from edge_app.detect.base import LetterboxMeta
from edge_app.detect.letterbox import PAD_VALUE, as_bgr, letterbox_meta, resized_wh

log = logging.getLogger(__name__)

#: exactly the CPU path's pad value: uint8 114 times float32(1/255)
PAD_VALUE_F32 = float(np.float32(PAD_VALUE) * np.float32(1.0 / 255.0))


class _Slot:
    """Staging memory for one frame of a batch: pinned host and device, grown on demand."""

    def __init__(self) -> None:
        self.host: Optional[np.ndarray] = None
        self.device: Optional[DeviceBuffer] = None

    def ensure(self, device: CudaDevice, nbytes: int) -> None:
        if self.host is None or self.host.nbytes < nbytes:
            # only a larger frame than ever before allocates; old buffers stay until close()
            self.host = device.alloc_pinned(nbytes, np.uint8)
            self.device = device.alloc_device(nbytes)


class GpuLetterbox:
    """Letterboxes up to ``max_batch`` frames into a device tensor of ``dtype`` (float32/float16)."""

    def __init__(self, device: CudaDevice, input_hw: Tuple[int, int], max_batch: int,
                 dtype: np.dtype = np.dtype(np.float32)) -> None:
        self.device = device
        self.input_hw = (int(input_hw[0]), int(input_hw[1]))
        self.max_batch = int(max_batch)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.float16)):
            raise ValueError(f"GPU letterboxing writes float32 or float16, not {self.dtype}")
        name = KERNEL_F32 if self.dtype == np.float32 else KERNEL_F16
        # no FMA contraction: the weight arithmetic must round like OpenCV's plain float code
        options = kernel_options_for(device.compute_capability, ["--fmad=false"])
        self._kernel = device.compile_kernel(SOURCE, name, options)
        self._slots: List[_Slot] = [_Slot() for _ in range(self.max_batch)]
        self._stream: Stream = device.create_stream()
        height, width = self.input_hw
        self.image_nbytes = 3 * height * width * self.dtype.itemsize

    def __call__(self, frames: Sequence[np.ndarray], dst_ptr: int, synchronize: bool = True) -> List[LetterboxMeta]:
        """Write ``frames`` as images 0..n-1 of the tensor at ``dst_ptr``; returns their metas.

        With ``synchronize`` (the default) the tensor is complete on return, so another stream
        (the engine's) may read it without further ordering.
        """
        if len(frames) > self.max_batch:
            raise ValueError(f"batch of {len(frames)} frames exceeds max_batch {self.max_batch}")
        device = self.device
        device.make_current()
        height, width = self.input_hw
        grid, block = launch_grid_2d(width, height)
        metas = []
        for index, frame in enumerate(frames):
            image = np.ascontiguousarray(as_bgr(frame))
            src_h, src_w = image.shape[:2]
            meta = letterbox_meta((src_h, src_w), self.input_hw)
            new_w, new_h = resized_wh(meta.src_hw, meta.scale)
            slot = self._slots[index]
            slot.ensure(device, image.nbytes)
            staging = slot.host[:image.nbytes]
            np.copyto(staging, image.reshape(-1))
            device.memcpy_htod_async(slot.device.ptr, staging, self._stream)
            args = [
                KernelArg.ptr(slot.device.ptr), KernelArg.i32(src_w), KernelArg.i32(src_h), KernelArg.i32(src_w * 3),
                KernelArg.ptr(dst_ptr + index * self.image_nbytes), KernelArg.i32(width), KernelArg.i32(height),
                KernelArg.i32(new_w), KernelArg.i32(new_h), KernelArg.i32(meta.pad_xy[0]), KernelArg.i32(meta.pad_xy[1]),
                KernelArg.f32(PAD_VALUE_F32),
            ]
            device.launch(self._kernel, grid, block, args, self._stream)
            metas.append(meta)
        if synchronize:
            self._stream.synchronize()
        return metas

    @property
    def stream(self) -> Stream:
        return self._stream
