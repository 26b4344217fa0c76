"""A camera's privacy masks rendered for one frame size and applied to BGR frames.

The polygons are drawn once per frame size (``cv2.fillPoly``) into masks cut to each polygon's
bounding box; applying them is then, per polygon, one in-place numpy AND of the box with its
mask (black) or one box blur of the box copied back through its mask (``cv2.copyTo``): no
per-pixel Python, and the pixels outside every bounding box are not touched at all. (A masked
``np.copyto(..., where=)`` was measured 50 to 100 times slower than either on a 1080p frame.)
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
#: the blur keeps no detail finer than this fraction of the frame's height (at least MIN_BLUR_PX
#: pixels): a face or a number plate a tenth of the frame high is a few blurred blocks
BLUR_FRACTION = 1 / 24
MIN_BLUR_PX = 8
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
    inside: np.ndarray  # uint8 (y1 - y0, x1 - x0): 255 inside the polygon, 0 outside
    keep: np.ndarray  # uint8 (y1 - y0, x1 - x0, 3): 0 inside, 255 outside (ANDed: black inside)


@dataclass(frozen=True)
class RenderedMasks:
    """The masks of one camera drawn for one frame size."""

    height: int
    width: int
    black: Tuple[_Region, ...]
    blurred: Tuple[_Region, ...]
    blur_px: int

    @property
    def covered_fraction(self) -> float:
        canvas = np.zeros((self.height, self.width), dtype=bool)
        for r in self.black + self.blurred:
            canvas[r.y0:r.y1, r.x0:r.x1] |= r.inside > 0
        return float(canvas.mean())


def _aligned(start: int, end: int, limit: int, step: int) -> Tuple[int, int]:
    """``start``..``end`` grown to a multiple of ``step`` within 0..``limit`` (unchanged where it cannot be)."""
    size = -(-(end - start) // step) * step
    if size > limit:
        return start, end
    start = min(start, limit - size)
    return start, start + size


def _region(polygons: Sequence[Tuple[Point, ...]], height: int, width: int, align: int = 1) -> Optional[_Region]:
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
    # a box a whole number of blur steps wide and high scales down by whole blocks (the fast path)
    (y0, y1), (x0, x1) = _aligned(y0, y1, height, align), _aligned(x0, x1, width, align)
    inside = np.ascontiguousarray(canvas[y0:y1, x0:x1])
    keep = np.repeat((255 - inside)[..., None], 3, axis=2)
    return _Region(y0, y1, x0, x1, inside, keep)


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
        # one region per polygon: the bounding box of two far apart would cover most of the frame
        black = tuple(r for r in (_region([s.polygon], *key) for s in self.shapes if s.style == "black") if r)
        blur_px = max(MIN_BLUR_PX, int(round(key[0] * BLUR_FRACTION)))
        blurred = tuple(r for r in (_region([s.polygon], *key, align=blur_px) for s in self.shapes if s.style == "blur")
                        if r)
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
                # Averaged down by the blur size and scaled back up smoothly: a blur as strong as a
                # box filter that wide, at a tenth of its cost (the small picture holds every
                # detail that is left, and there is none finer than blur_px).
                height, width = box.shape[:2]
                small = cv2.resize(box, (max(1, width // masks.blur_px), max(1, height // masks.blur_px)),
                                   interpolation=cv2.INTER_AREA)
                soft = cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)
                cv2.copyTo(soft, region.inside, box)
        for region in masks.black:
            image[region.y0:region.y1, region.x0:region.x1] &= region.keep


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
