"""Decoding YOLOv8/v11 outputs on the GPU: score filter and NMS next to the engine.

Without it, every batch copies the whole raw output to the host (22 MB for 8 images of
YOLOv8n at 640) and reduces 80 class scores for each of 8400 anchors per image in numpy. With
it, two kernels (``edge_app.cuda.kernels.yolo_nms``) leave at most ``max_det`` boxes per image,
and the copy is a few kilobytes. Only ``yolo_channels_first`` outputs qualify; other layouts
have few rows already (end-to-end, EfficientNMS) or are rare (YOLOv5/v7) and stay on the host.

An image with more survivors of the score threshold than the kernels take (a threshold set
very low) is decoded on the host from its raw output, copied for that batch only, so the
result never depends on the cap.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from edge_app.cuda.base import CudaDevice, KernelArg, kernel_options_for
from edge_app.cuda.kernels.yolo_nms import (CANDIDATE_CAP, KERNEL_CANDIDATES_F16, KERNEL_CANDIDATES_F32, KERNEL_NMS,
                                            ROW_VALUES, SOURCE)
from edge_app.detect.base import LetterboxMeta
from edge_app.detect.yolo_outputs import DecoderTuning, YoloDecoder
from edge_app.detect.detections import Detections

log = logging.getLogger(__name__)

_CANDIDATE_BLOCK = 256


@dataclass
class GpuDecoded:
    """One batch decoded on the GPU, as ``infer`` hands it to ``postprocess``.

    ``kept[i]`` boxes of image i are ``rows[i, :kept[i]]`` (x1, y1, x2, y2, score, class in model
    pixels, best first); ``kept[i] == -1`` means image i is to be decoded from ``raw[i]``.
    """

    kept: np.ndarray
    rows: np.ndarray
    raw: Optional[np.ndarray] = None

    @property
    def size(self) -> int:
        return int(self.kept.shape[0])


class GpuYoloDecoder:
    """The two kernels, their device buffers, and ``rotation`` sets of pinned results."""

    def __init__(self, device: CudaDevice, max_batch: int, output_shape: Sequence[int], output_dtype: np.dtype,
                 num_classes: int, max_det: int, rotation: int) -> None:
        channels, anchors = int(output_shape[-2]), int(output_shape[-1])
        if channels != 4 + num_classes:
            raise ValueError(f"output of {channels} channels does not hold 4 box values and {num_classes} classes")
        dtype = np.dtype(output_dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float16)):
            raise ValueError(f"GPU decoding reads float32 or float16 outputs, not {dtype}")
        self.device, self.max_batch, self.max_det = device, int(max_batch), int(max_det)
        self.channels, self.anchors, self.num_classes, self.output_dtype = channels, anchors, int(num_classes), dtype
        options = kernel_options_for(device.compute_capability)
        self._candidates = device.compile_kernel(
            SOURCE, KERNEL_CANDIDATES_F16 if dtype == np.float16 else KERNEL_CANDIDATES_F32, options)
        self._nms = device.compile_kernel(SOURCE, KERNEL_NMS, options)
        batch, cap = self.max_batch, CANDIDATE_CAP
        self._rows = device.alloc_device(batch * cap * ROW_VALUES * 4)
        self._anchor_of = device.alloc_device(batch * cap * 4)
        self._counts = device.alloc_device(batch * 4)
        self._kept_rows = device.alloc_device(batch * self.max_det * ROW_VALUES * 4)
        self._kept = device.alloc_device(batch * 4)
        self._keep_class = device.alloc_device(self.num_classes)
        self._zeros = device.alloc_pinned(batch, np.int32)
        self._zeros[...] = 0
        self._class_mask = device.alloc_pinned(self.num_classes, np.uint8)
        self._host_kept = [device.alloc_pinned(batch, np.int32) for _ in range(rotation)]
        self._host_rows = [device.alloc_pinned((batch, self.max_det, ROW_VALUES), np.float32) for _ in range(rotation)]
        self._host_raw: List[np.ndarray] = []
        self._rotation = rotation
        self._next = 0
        self._mask_for: Optional[object] = None
        self._stream = device.create_stream()
        self.overflowed_batches = 0

    def run(self, output_ptr: int, count: int, tuning: DecoderTuning) -> GpuDecoded:
        """Decode images 0..count-1 of the raw output at ``output_ptr`` (complete on the device)."""
        if not 1 <= count <= self.max_batch:
            raise ValueError(f"batch of {count} outside 1..{self.max_batch}")
        device, stream = self.device, self._stream
        device.make_current()
        keep_class_ptr = self._upload_class_mask(tuning)
        device.memcpy_htod_async(self._counts.ptr, self._zeros[:count], stream)
        grid = ((self.anchors + _CANDIDATE_BLOCK - 1) // _CANDIDATE_BLOCK, count, 1)
        device.launch(self._candidates, grid, (_CANDIDATE_BLOCK, 1, 1), [
            KernelArg.ptr(output_ptr), KernelArg.i32(self.anchors), KernelArg.i32(self.num_classes),
            KernelArg.f32(tuning.conf_threshold), KernelArg.ptr(keep_class_ptr), KernelArg.ptr(self._rows.ptr),
            KernelArg.ptr(self._anchor_of.ptr), KernelArg.ptr(self._counts.ptr), KernelArg.i32(CANDIDATE_CAP)], stream)
        device.launch(self._nms, (count, 1, 1), (CANDIDATE_CAP, 1, 1), [
            KernelArg.ptr(self._rows.ptr), KernelArg.ptr(self._anchor_of.ptr), KernelArg.ptr(self._counts.ptr),
            KernelArg.i32(CANDIDATE_CAP), KernelArg.f32(tuning.iou_threshold), KernelArg.i32(self.max_det),
            KernelArg.ptr(self._kept_rows.ptr), KernelArg.ptr(self._kept.ptr)], stream)
        out_set = self._next
        self._next = (out_set + 1) % self._rotation
        kept, rows = self._host_kept[out_set][:count], self._host_rows[out_set][:count]
        device.memcpy_dtoh_async(kept, self._kept.ptr, stream)
        device.memcpy_dtoh_async(rows, self._kept_rows.ptr, stream)
        stream.synchronize()
        raw = None
        if (kept < 0).any():
            raw = self._copy_raw(output_ptr, count, out_set)
        return GpuDecoded(kept, rows, raw)

    def _upload_class_mask(self, tuning: DecoderTuning) -> int:
        """The device class mask for ``tuning`` (0 when every class is kept), uploaded on change."""
        ids = tuning.keep_class_ids
        if ids is None:
            return 0
        if self._mask_for is not ids:
            self._class_mask[...] = 0
            valid = ids[(ids >= 0) & (ids < self.num_classes)]
            self._class_mask[valid] = 1
            self.device.memcpy_htod_async(self._keep_class.ptr, self._class_mask, self._stream)
            self._mask_for = ids
        return self._keep_class.ptr

    def _copy_raw(self, output_ptr: int, count: int, out_set: int) -> np.ndarray:
        # rare (a very low threshold): the buffers are made on first need, one per rotation set
        if not self._host_raw:
            shape = (self.max_batch, self.channels, self.anchors)
            self._host_raw = [self.device.alloc_pinned(shape, self.output_dtype) for _ in range(self._rotation)]
        self.overflowed_batches += 1
        raw = self._host_raw[out_set][:count]
        self.device.memcpy_dtoh_async(raw, output_ptr, self._stream)
        self._stream.synchronize()
        return raw


def detections_from(decoded: GpuDecoded, metas: Sequence[LetterboxMeta], decoder: YoloDecoder) -> List[Detections]:
    """One Detections per frame from a GPU-decoded batch; overflowed images through the host decoder."""
    if decoded.size < len(metas):
        raise ValueError(f"the GPU decoded {decoded.size} images but {len(metas)} frames were sent")
    results = []
    for image, meta in enumerate(metas):
        kept = int(decoded.kept[image])
        if kept < 0:
            results.append(decoder.decode([decoded.raw[image:image + 1]], [meta])[0])
            continue
        rows = decoded.rows[image, :kept]
        results.append(decoder.to_detections(rows[:, :4], rows[:, 4], rows[:, 5].astype(np.int64), meta))
    return results
