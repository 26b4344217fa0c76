"""Letterboxing frames into the model input, and mapping boxes back to source pixels.

Geometry follows the Ultralytics convention the models were trained with: scale to fit keeping
the aspect ratio, pad with grey 114, padding split evenly with the smaller half on the left/top.

The resized image is ``round(w * scale)`` by ``round(h * scale)`` pixels, so the true scale of
each axis differs slightly from ``LetterboxMeta.scale``. The inverse mapping uses the per-axis
scale (recomputed from the meta exactly as the forward pass does), which keeps large frames
accurate to a source pixel instead of drifting by several at the far edge.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.batch import LetterboxMeta, PreparedBatch
from edge_app.capture.gpu_image import DeviceNv12Image, HostNv12Image
from edge_app.opencv import opencv

log = logging.getLogger(__name__)

PAD_VALUE = 114
_INV_255 = np.float32(1.0 / 255.0)


def resized_wh(src_hw: Tuple[int, int], scale: float) -> Tuple[int, int]:
    """(width, height) of the source after scaling, as placed inside the model input."""
    src_h, src_w = src_hw
    return max(1, int(round(src_w * scale))), max(1, int(round(src_h * scale)))


def letterbox_meta(src_hw: Tuple[int, int], dst_hw: Tuple[int, int]) -> LetterboxMeta:
    """Where a ``src_hw`` frame lands inside a ``dst_hw`` model input."""
    src_h, src_w = int(src_hw[0]), int(src_hw[1])
    dst_h, dst_w = int(dst_hw[0]), int(dst_hw[1])
    if min(src_h, src_w, dst_h, dst_w) <= 0:
        raise ValueError(f"cannot letterbox a {src_w}x{src_h} frame into {dst_w}x{dst_h}")
    scale = min(dst_h / src_h, dst_w / src_w)
    # round(w * scale) never exceeds the input: the limiting axis rounds to exactly its size.
    new_w, new_h = resized_wh((src_h, src_w), scale)
    # The -0.1 puts the odd pixel of an uneven split on the right/bottom, as at training time.
    left = int(round((dst_w - new_w) / 2 - 0.1))
    top = int(round((dst_h - new_h) / 2 - 0.1))
    return LetterboxMeta(src_hw=(src_h, src_w), scale=float(scale), pad_xy=(max(0, left), max(0, top)))


def _axis_scales(meta: LetterboxMeta) -> Tuple[float, float]:
    new_w, new_h = resized_wh(meta.src_hw, meta.scale)
    src_h, src_w = meta.src_hw
    return new_w / src_w, new_h / src_h


def source_to_model(xy: np.ndarray, meta: LetterboxMeta) -> np.ndarray:
    """Map ``(..., 2)`` source-pixel points (or ``(..., 4)`` xyxy boxes) into model pixels."""
    points = np.asarray(xy, dtype=np.float64)
    scale_x, scale_y = _axis_scales(meta)
    left, top = meta.pad_xy
    out = points.copy()
    out[..., 0::2] = points[..., 0::2] * scale_x + left
    out[..., 1::2] = points[..., 1::2] * scale_y + top
    return out


def model_to_source(xy: np.ndarray, meta: LetterboxMeta, clip: bool = True) -> np.ndarray:
    """Map ``(..., 2)`` model-pixel points (or ``(..., 4)`` xyxy boxes) back to source pixels.

    With ``clip`` the result lies inside the frame: x in ``[0, width]``, y in ``[0, height]``.
    """
    points = np.asarray(xy, dtype=np.float64)
    scale_x, scale_y = _axis_scales(meta)
    left, top = meta.pad_xy
    # whole-array ufuncs with per-column constants: this runs for every published frame, and
    # strided slices with np.clip cost several times as much for a handful of boxes
    pairs = points.shape[-1] // 2
    out = (points - np.array([left, top] * pairs, np.float64)) / np.array([scale_x, scale_y] * pairs, np.float64)
    if clip:
        src_h, src_w = meta.src_hw
        np.minimum(np.maximum(out, 0.0, out=out), np.array([src_w, src_h] * pairs, np.float64), out=out)
    return out


def boxes_to_source(xyxy: np.ndarray, meta: LetterboxMeta) -> np.ndarray:
    """Model-pixel xyxy boxes ``(N, 4)`` as float32 source-pixel boxes clipped to the frame."""
    return model_to_source(np.asarray(xyxy).reshape(-1, 4), meta).astype(np.float32)


def as_bgr(frame: np.ndarray) -> np.ndarray:
    """A 3-channel uint8 view or copy of a BGR, BGRA or greyscale frame (or of an NV12 one)."""
    if isinstance(frame, (HostNv12Image, DeviceNv12Image)):
        return frame.bgr()  # the CPU path needs pixels on the host: converted once per frame
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 numpy images, got {getattr(frame, 'dtype', type(frame).__name__)}")
    if frame.ndim == 3 and frame.shape[2] == 3:
        return frame
    cv2 = opencv()
    if frame.ndim == 2 or (frame.ndim == 3 and frame.shape[2] == 1):
        return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    if frame.ndim == 3 and frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)
    raise ValueError(f"frames must be HxW, HxWx3 or HxWx4 images, got shape {frame.shape}")


@dataclass
class _Buffer:
    """One uint8 canvas and its float tensor; ``slot_hw`` remembers each slot's geometry."""

    canvas: np.ndarray  # (N, H, W, 3) uint8 BGR
    tensor: np.ndarray  # (N, 3, H, W) float32 RGB 0..1
    slot_hw: List[Optional[Tuple[int, int]]] = field(default_factory=list)


class Letterboxer:
    """Turns BGR frames into a model input tensor, reusing preallocated memory.

    Each frame is resized straight into its place in a grey canvas, then the whole batch is
    converted (BGR->RGB, /255, HWC->CHW) by one numpy call into a float32 tensor. Padding is
    only repainted when a slot's frame size changes, which for a fixed camera is never.

    ``num_buffers`` buffers are used in turn, so the tensor of a ``PreparedBatch`` stays valid
    until ``num_buffers`` further calls. The default 3 covers a three-stage pipeline: batch k in
    the model, batch k+1 waiting in a one-slot queue, batch k+2 being prepared.
    """

    def __init__(self, input_hw: Tuple[int, int], max_batch: int = 1, num_buffers: int = 3,
                 interpolation: Optional[int] = None) -> None:
        if max_batch < 1 or num_buffers < 1:
            raise ValueError("max_batch and num_buffers must be at least 1")
        self.input_hw = (int(input_hw[0]), int(input_hw[1]))
        self.max_batch = int(max_batch)
        self._cv2 = opencv()
        self.interpolation = self._cv2.INTER_LINEAR if interpolation is None else interpolation
        # Allocated lazily and grown to the largest batch seen: a max_batch of 64 that is never
        # filled must not cost hundreds of MB.
        self._buffers: List[Optional[_Buffer]] = [None] * num_buffers
        self._next = 0

    def _buffer(self, size: int) -> _Buffer:
        index = self._next
        self._next = (self._next + 1) % len(self._buffers)
        buffer = self._buffers[index]
        if buffer is None or buffer.canvas.shape[0] < size:
            height, width = self.input_hw
            buffer = _Buffer(
                canvas=np.full((size, height, width, 3), PAD_VALUE, dtype=np.uint8),
                tensor=np.empty((size, 3, height, width), dtype=np.float32),
                slot_hw=[None] * size,
            )
            self._buffers[index] = buffer
        return buffer

    def __call__(self, frames: Sequence[np.ndarray]) -> PreparedBatch:
        count = len(frames)
        if count == 0:
            raise ValueError("cannot prepare an empty batch")
        if count > self.max_batch:
            raise ValueError(f"batch of {count} frames exceeds max_batch {self.max_batch}")
        buffer = self._buffer(count)
        metas = [self._place(buffer, slot, frame) for slot, frame in enumerate(frames)]
        tensor = buffer.tensor[:count]
        # One pass: reversed channel view (BGR->RGB) of the HWC canvas, scaled into the CHW tensor.
        np.multiply(buffer.canvas[:count].transpose(0, 3, 1, 2)[:, ::-1], _INV_255, out=tensor)
        return PreparedBatch(tensor=tensor, metas=metas)

    def _place(self, buffer: _Buffer, slot: int, frame: np.ndarray) -> LetterboxMeta:
        image = as_bgr(frame)
        src_hw = (int(image.shape[0]), int(image.shape[1]))
        meta = letterbox_meta(src_hw, self.input_hw)
        canvas = buffer.canvas[slot]
        if buffer.slot_hw[slot] != src_hw:
            canvas.fill(PAD_VALUE)
            buffer.slot_hw[slot] = src_hw
        new_w, new_h = resized_wh(src_hw, meta.scale)
        left, top = meta.pad_xy
        region = canvas[top:top + new_h, left:left + new_w]
        if (new_h, new_w) == src_hw:
            region[...] = image
        else:
            resized = self._cv2.resize(image, (new_w, new_h), dst=region, interpolation=self.interpolation)
            # OpenCV falls back to a fresh array if it cannot write into the view.
            if resized.ctypes.data != region.ctypes.data:
                region[...] = resized
        return meta


def letterbox(frame: np.ndarray, input_hw: Tuple[int, int]) -> Tuple[np.ndarray, LetterboxMeta]:
    """One frame as a ``(1, 3, H, W)`` tensor (fresh memory) and its meta; for tools and tests."""
    batch = Letterboxer(input_hw, max_batch=1, num_buffers=1)([frame])
    return batch.tensor, batch.metas[0]
