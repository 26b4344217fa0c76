"""A frame image seen through a camera's privacy masks, masked when its pixels are first asked for.

Whatever sends a frame's pixels out (snapshots, event snapshots, the live view) reads them through
``edge_app.capture.gpu_image.bgr_image``; a ``MaskedImage`` answers it with the masked copy, made
once on first use and shared by every reader. A frame nobody looks at costs nothing to mask.
"""
from __future__ import annotations

import threading
from typing import Optional, Tuple

import numpy as np

from edge_app.capture.gpu_image import FrameImage, bgr_image, image_hw
from edge_app.privacy.masks import PrivacyMasks


class MaskedImage:
    """``source`` with ``masks`` applied; the source's own pixels are never handed out."""

    def __init__(self, source: FrameImage, masks: PrivacyMasks) -> None:
        self._source = source
        self.masks = masks
        self._lock = threading.Lock()
        self._bgr: Optional[np.ndarray] = None

    @property
    def shape(self) -> Tuple[int, int, int]:
        height, width = image_hw(self._source)
        return height, width, 3

    def bgr(self) -> np.ndarray:
        with self._lock:
            if self._bgr is None:
                masked = self.masks.apply(bgr_image(self._source))
                masked.setflags(write=False)
                self._bgr = masked
            return self._bgr


def masked(image: FrameImage, masks: Optional[PrivacyMasks]) -> FrameImage:
    """``image`` as the world may see it: behind ``masks`` when there are any."""
    if masks is None or isinstance(image, MaskedImage):
        return image
    return MaskedImage(image, masks)


def masked_now(image: FrameImage, masks: PrivacyMasks) -> np.ndarray:
    """The masked BGR pixels right away (frames for a detector that must not see the masked areas)."""
    return masks.apply(bgr_image(image))
