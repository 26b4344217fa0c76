"""What passes from a detector's preprocessing to its model: the batch and where each frame sits in it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np


@dataclass(frozen=True)
class LetterboxMeta:
    """How one source frame was placed into the model input (see detect.letterbox)."""

    src_hw: tuple  # (height, width) of the source frame
    scale: float  # model pixels per source pixel
    pad_xy: tuple  # (left, top) padding in model pixels


@dataclass
class PreparedBatch:
    """A batch ready for the model: either a host tensor or images already in device memory."""

    #: (N, 3, H, W) float32, RGB, 0..1; None when the images were placed on the device
    tensor: Optional[np.ndarray]
    metas: List[LetterboxMeta]
    #: the backend's device input slot holding the images, when ``tensor`` is None
    device_slot: Optional[int] = None

    def __post_init__(self) -> None:
        if (self.tensor is None) == (self.device_slot is None):
            raise ValueError("a prepared batch holds either a host tensor or a device slot")
        if self.tensor is not None and self.tensor.shape[0] != len(self.metas):
            raise ValueError(f"tensor of {self.tensor.shape[0]} images for {len(self.metas)} frames")

    @property
    def size(self) -> int:
        return len(self.metas)
