"""GPU letterboxing: frames -> the engine's input tensor, with one kernel launch per frame.

A BGR frame is copied to the GPU as uint8 (a third of the bytes of the float tensor) and the
kernel in ``kernels.letterbox`` does resize, padding, BGR->RGB, /255 and HWC->CHW, writing
straight into the device buffer the engine reads. Geometry comes from the CPU letterbox module,
so both paths place a frame identically.

NV12 frames go through the NV12 kernel, which also does the colour conversion: one already in
device memory (a hardware decoder's output) is read where it lies, so decoder -> engine input
involves no host copy at all; one in host memory is uploaded once (half the bytes of BGR).
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.cuda.base import (CudaDevice, DeviceBuffer, KernelArg, PackedArgs, Stream, kernel_options_for,
                                launch_grid_2d)
from edge_app.cuda.kernels.letterbox import KERNEL_F16, KERNEL_F32, KERNEL_NV12_F16, KERNEL_NV12_F32, SOURCE
from edge_app.detect.base import LetterboxMeta
from edge_app.detect.letterbox import PAD_VALUE, as_bgr, letterbox_meta, resized_wh
from edge_app.capture.gpu_image import DeviceNv12Image, FrameImage, HostNv12Image, Nv12Planes

log = logging.getLogger(__name__)

#: NV12 launches kept packed at once: every camera's frame slots x the batch's places x the
#: detector's input buffers (8 cameras with 8 slots, 8 places and 3 buffers: 1,536), about 0.5 kB each
MAX_PACKED_LAUNCHES = 4096
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
        half = self.dtype == np.float16
        # no FMA contraction: the weight arithmetic must round like OpenCV's plain float code
        options = kernel_options_for(device.compute_capability, ["--fmad=false"])
        self._kernel = device.compile_kernel(SOURCE, KERNEL_F16 if half else KERNEL_F32, options)
        self._nv12_kernel = device.compile_kernel(SOURCE, KERNEL_NV12_F16 if half else KERNEL_NV12_F32, options)
        self._slots: List[_Slot] = [_Slot() for _ in range(self.max_batch)]
        self._stream: Stream = device.create_stream()
        # An NVDEC camera's frames come from a few slots and go to a few places in the batch: the
        # same arguments again and again, and making a dozen costs about 10 us (the gather thread
        # launches once a frame, and it sets the pipeline's pace).
        self._nv12_launches: Dict[Tuple[Nv12Planes, int], Tuple[LetterboxMeta, PackedArgs]] = {}
        height, width = self.input_hw
        self.image_nbytes = 3 * height * width * self.dtype.itemsize

    def __call__(self, frames: Sequence[FrameImage], dst_ptr: int, synchronize: bool = True) -> List[LetterboxMeta]:
        """Write ``frames`` as images 0..n-1 of the tensor at ``dst_ptr``; returns their metas.

        With ``synchronize`` (the default) the tensor is complete on return, so another stream
        (the engine's) may read it without further ordering.
        """
        if len(frames) > self.max_batch:
            raise ValueError(f"batch of {len(frames)} frames exceeds max_batch {self.max_batch}")
        self.device.make_current()
        height, width = self.input_hw
        grid, block = launch_grid_2d(width, height)
        metas = []
        for index, frame in enumerate(frames):
            out_ptr = dst_ptr + index * self.image_nbytes
            if isinstance(frame, DeviceNv12Image):
                planes = frame.planes
            elif isinstance(frame, HostNv12Image):
                planes = self._upload_nv12(index, frame)
            else:
                metas.append(self._bgr(index, frame, out_ptr, grid, block))
                continue
            metas.append(self._nv12(planes, out_ptr, grid, block))
        if synchronize:
            self._stream.synchronize()
        return metas

    def _placement(self, src_h: int, src_w: int) -> Tuple[LetterboxMeta, List[KernelArg]]:
        """The frame's meta, and the kernel arguments after the output pointer: output size,
        resized size, padding, pad value."""
        height, width = self.input_hw
        meta = letterbox_meta((src_h, src_w), self.input_hw)
        new_w, new_h = resized_wh(meta.src_hw, meta.scale)
        return meta, [KernelArg.i32(width), KernelArg.i32(height), KernelArg.i32(new_w), KernelArg.i32(new_h),
                KernelArg.i32(meta.pad_xy[0]), KernelArg.i32(meta.pad_xy[1]), KernelArg.f32(PAD_VALUE_F32)]

    def _bgr(self, index: int, frame: np.ndarray, out_ptr: int, grid, block) -> LetterboxMeta:
        image = np.ascontiguousarray(as_bgr(frame))
        src_h, src_w = image.shape[:2]
        slot = self._slots[index]
        slot.ensure(self.device, image.nbytes)
        staging = slot.host[:image.nbytes]
        np.copyto(staging, image.reshape(-1))
        self.device.memcpy_htod_async(slot.device.ptr, staging, self._stream)
        meta, placement = self._placement(src_h, src_w)
        args = [KernelArg.ptr(slot.device.ptr), KernelArg.i32(src_w), KernelArg.i32(src_h), KernelArg.i32(src_w * 3),
                KernelArg.ptr(out_ptr), *placement]
        self.device.launch(self._kernel, grid, block, args, self._stream)
        return meta

    def _upload_nv12(self, index: int, frame: HostNv12Image) -> Nv12Planes:
        """Stage a host NV12 frame through pinned memory; it then lies packed in the slot."""
        slot = self._slots[index]
        slot.ensure(self.device, frame.nv12.nbytes)
        staging = slot.host[:frame.nv12.nbytes]
        np.copyto(staging, frame.nv12.reshape(-1))
        self.device.memcpy_htod_async(slot.device.ptr, staging, self._stream)
        width, height = frame.width, frame.height
        return Nv12Planes(slot.device.ptr, slot.device.ptr + width * height, width, width, width, height)

    def _nv12(self, planes: Nv12Planes, out_ptr: int, grid, block) -> LetterboxMeta:
        kept = self._nv12_launches.get((planes, out_ptr))
        if kept is None:
            meta, placement = self._placement(planes.height, planes.width)
            args = [KernelArg.ptr(planes.y_ptr), KernelArg.i32(planes.y_pitch),
                    KernelArg.ptr(planes.uv_ptr), KernelArg.i32(planes.uv_pitch),
                    KernelArg.i32(planes.width), KernelArg.i32(planes.height),
                    KernelArg.ptr(out_ptr), *placement]
            if len(self._nv12_launches) >= MAX_PACKED_LAUNCHES:  # slots that came and went
                self._nv12_launches.clear()
            kept = self._nv12_launches[(planes, out_ptr)] = (meta, self.device.pack_args(args))
        meta, packed = kept
        self.device.launch_packed(self._nv12_kernel, grid, block, packed, self._stream)
        return meta

    @property
    def stream(self) -> Stream:
        return self._stream
