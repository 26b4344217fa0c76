"""The reference for the NV12 letterbox kernel: NV12 -> letterboxed model input, without a GPU.

It chains the two references the GPU kernels are held to: the colour conversion in plain numpy
with OpenCV's integer BT.601 coefficients (``edge_app.capture.gpu_image.nv12_to_bgr_reference``, equal
to ``cv2.cvtColor(COLOR_YUV2BGR_NV12)``) and the CPU letterbox (resize, pad, RGB, /255, CHW).
The kernel does both in one pass and must match this within 1/255 per value.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from edge_app.detect.base import LetterboxMeta
from edge_app.detect.letterbox import letterbox
from edge_app.capture.gpu_image import nv12_to_bgr_reference
from edge_app.opencv import opencv


def letterbox_nv12_reference(nv12: np.ndarray, input_hw: Tuple[int, int]) -> Tuple[np.ndarray, LetterboxMeta]:
    """A packed ``(H * 3 / 2, W)`` NV12 frame as a ``(1, 3, H, W)`` float32 RGB 0..1 tensor."""
    return letterbox(nv12_to_bgr_reference(nv12), input_hw)


def bgr_to_nv12(bgr: np.ndarray) -> np.ndarray:
    """A packed NV12 array of a BGR image (even size), for making test frames with OpenCV."""
    cv2 = opencv()

    height, width = bgr.shape[:2]
    i420 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)
    nv12 = np.empty((height * 3 // 2, width), dtype=np.uint8)
    nv12[:height] = i420[:height]
    u = i420[height:height + height // 4].reshape(height // 2, width // 2)
    v = i420[height + height // 4:].reshape(height // 2, width // 2)
    uv = nv12[height:].reshape(height // 2, width // 2, 2)
    uv[..., 0], uv[..., 1] = u, v
    return nv12
