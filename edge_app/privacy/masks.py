"""A camera's privacy masks rendered for one frame size and applied to BGR frames.

The polygons are drawn once per frame size (``cv2.fillPoly``) into a boolean mask cut to their
bounding box; applying them is then one ``np.copyto`` for the black masks and one box blur of
each blurred mask's bounding box, copied through its mask: no per-pixel Python, and the pixels
outside every bounding box are not touched at all.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.config.schema_privacy import CameraPrivacyConfig
from edge_app.opencv import opencv

#: a point of a polygon in fractions of the frame, x right, y down
Point = Tuple[float, float]
#: the box blur's kernel is this fraction of the frame's height (at least MIN_BLUR_PX): a face
#: or a number plate a tenth of the frame high loses every detail
BLUR_FRACTION = 1 / 12
MIN_BLUR_PX = 15
_SHIFT = 4  # fractional bits of the polygons' points when they are drawn


@dataclass(frozen=True)
class MaskShape:
    polygon: Tuple[Point, ...]
    style: str = "black"  # black | blur


@dataclass(frozen=True)
class _Region:
    """The pixels of one frame size under some masks: a bounding box and the mask inside it."""

    y0: int
    y1: int
    x0: int
    x1: int
    inside: np.ndarray  # bool, (y1 - y0, x1 - x0, 1): broadcast over the colour channels


@dataclass(frozen=True)
class RenderedMasks:
    """The masks of one camera drawn for one frame size."""

    height: int
    width: int
    black: Optional[_Region]
    blurred: Tuple[_Region, ...]
    blur_px: int

    @property
    def covered_fraction(self) -> float:
        covered = sum(int(r.inside.sum()) for r in ((self.black,) if self.black else ()) + self.blurred)
        return covered / float(self.height * self.width)


def _region(polygons: Sequence[Tuple[Point, ...]], height: int, width: int) -> Optional[_Region]:
    if not polygons:
        return None
    cv2 = opencv()
    canvas = np.zeros((height, width), dtype=np.uint8)
    scale = np.array([width, height], dtype=np.float64)
    # Drawn at 1/16 pixel, then grown by one pixel: every pixel the polygon touches, even partly,
    # is masked (a mask that leaves its edge pixels out would let a sliver through).
    points = [np.round(np.asarray(p, dtype=np.float64) * scale * (1 << _SHIFT)).astype(np.int32) for p in polygons]
    cv2.fillPoly(canvas, points, 255, lineType=cv2.LINE_8, shift=_SHIFT)
    cv2.polylines(canvas, points, True, 255, thickness=1, lineType=cv2.LINE_8, shift=_SHIFT)
    canvas = cv2.dilate(canvas, np.ones((3, 3), dtype=np.uint8))
    ys, xs = np.nonzero(canvas)
    if ys.size == 0:
        return None
    y0, y1, x0, x1 = int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1
    return _Region(y0, y1, x0, x1, (canvas[y0:y1, x0:x1] > 0)[..., None])


class PrivacyMasks:
    """One camera's masks; ``apply`` returns a masked copy of a BGR frame (thread-safe)."""

    def __init__(self, shapes: Sequence[MaskShape]) -> None:
        if not shapes:
            raise ValueError("PrivacyMasks needs at least one mask")
        self.shapes = tuple(shapes)
        self._lock = threading.Lock()
        self._rendered: Dict[Tuple[int, int], RenderedMasks] = {}

    @classmethod
    def from_config(cls, privacy: CameraPrivacyConfig) -> Optional["PrivacyMasks"]:
        """The masks of ``cameras[].privacy``; None when it has none."""
        shapes = [MaskShape(tuple((float(x), float(y)) for x, y in m.polygon), m.style) for m in privacy.masks]
        return cls(shapes) if shapes else None

    def rendered(self, height: int, width: int) -> RenderedMasks:
        """The masks drawn for ``height`` x ``width`` frames (drawn once per size, then kept)."""
        key = (int(height), int(width))
        with self._lock:
            found = self._rendered.get(key)
        if found is not None:
            return found
        black = _region([s.polygon for s in self.shapes if s.style == "black"], *key)
        blurred = tuple(r for r in (_region([s.polygon], *key) for s in self.shapes if s.style == "blur") if r)
        blur_px = max(MIN_BLUR_PX, int(round(key[0] * BLUR_FRACTION))) | 1
        found = RenderedMasks(key[0], key[1], black, blurred, blur_px)
        with self._lock:
            if len(self._rendered) > 8:  # a camera changes size rarely; never grow without bound
                self._rendered.clear()
            self._rendered[key] = found
        return found

    def apply(self, image: np.ndarray) -> np.ndarray:
        """A copy of the BGR ``image`` with the masks applied (``image`` itself is not changed)."""
        out = np.array(image, dtype=np.uint8, copy=True, order="C")
        self.apply_in_place(out)
        return out

    def apply_in_place(self, image: np.ndarray) -> None:
        """Mask the writable BGR (H, W, 3) uint8 ``image`` itself."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"privacy masks apply to BGR uint8 (H, W, 3) images, got {image.dtype} {image.shape}")
        masks = self.rendered(image.shape[0], image.shape[1])
        # Blurred areas first: a black mask overlapping one stays black.
        if masks.blurred:
            cv2 = opencv()
            for region in masks.blurred:
                box = image[region.y0:region.y1, region.x0:region.x1]
                soft = cv2.blur(box, (masks.blur_px, masks.blur_px), borderType=cv2.BORDER_REPLICATE)
                soft = cv2.blur(soft, (masks.blur_px, masks.blur_px), borderType=cv2.BORDER_REPLICATE)
                np.copyto(box, soft, where=region.inside)
        if masks.black is not None:
            region = masks.black
            np.copyto(image[region.y0:region.y1, region.x0:region.x1], 0, where=region.inside)


def shapes_key(privacy: CameraPrivacyConfig) -> Tuple[MaskShape, ...]:
    """What a camera's masks are made of, comparable across configurations."""
    return tuple(MaskShape(tuple((float(x), float(y)) for x, y in m.polygon), m.style) for m in privacy.masks)


class MaskBook:
    """Every camera's ``PrivacyMasks``, kept across configuration changes that leave them alone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._masks: Dict[str, PrivacyMasks] = {}
        self._hide_from_detector: Dict[str, bool] = {}

    def configure(self, cameras: Sequence[object]) -> None:
        """``cameras``: ``CameraConfig`` objects (their ``id`` and ``privacy``)."""
        masks: Dict[str, PrivacyMasks] = {}
        hide: Dict[str, bool] = {}
        with self._lock:
            for camera in cameras:
                privacy: CameraPrivacyConfig = camera.privacy  # type: ignore[attr-defined]
                camera_id: str = camera.id  # type: ignore[attr-defined]
                if not privacy.masks:
                    continue
                old = self._masks.get(camera_id)
                masks[camera_id] = old if old is not None and old.shapes == shapes_key(privacy) \
                    else PrivacyMasks.from_config(privacy)
                hide[camera_id] = not privacy.detect
            self._masks, self._hide_from_detector = masks, hide

    def masks(self, camera_id: str) -> Optional[PrivacyMasks]:
        return self._masks.get(camera_id)

    def hidden_from_detector(self, camera_id: str) -> Optional[PrivacyMasks]:
        """The camera's masks when ``privacy.detect`` is false (the detector gets masked frames)."""
        return self._masks.get(camera_id) if self._hide_from_detector.get(camera_id) else None

    def cameras(self) -> List[str]:
        return list(self._masks)
