"""Motion on a small grey picture: running-average background, difference, threshold, regions.

The picture is the frame scaled to ``WIDTH_PX`` wide: the Y plane of an NV12 frame is already
grey, a BGR frame is scaled first and converted second (a 1080p frame costs about 0.4 ms in
all on one core). A frame in device memory (NVDEC) is scaled on the GPU by box averaging
(``DeviceNv12Image.small_grey``) and only the small picture comes to the host, blurred there
already (``MotionDetector.picture``). Then, per frame (Frigate's motion detector works the same way):

* blur: sensor noise is independent from pixel to pixel and averages out, a moving object does not;
* gain: the picture is scaled to the background's mean brightness, so an exposure or gain step
  of the camera changes nothing;
* difference with the background, threshold, dilate, and regions (contours): motion is a region
  of at least ``min_area`` of the frame outside the masks;
* a change over more than ``GLOBAL_CHANGE_FRACTION`` of the unmasked picture at once, before or
  after the gain (clipped highlights defeat a gain), is not motion but light (lights on, a cloud, the camera's night mode): the background starts again
  from this picture, so the change never becomes permanent motion;
* the background follows the picture with a time constant of ``BACKGROUND_TAU_S`` seconds (time
  passed in), whatever the frame rate, so slow light changes and objects that stay fade into it.

Pure apart from OpenCV: no clock, no threads.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from edge_app.capture.gpu_image import DeviceNv12Image, FrameImage, HostNv12Image
from edge_app.opencv import opencv

#: width of the picture motion is found on (height keeps the frame's aspect)
WIDTH_PX = 320
BLUR_PX = 5
DILATE_ITERATIONS = 2
#: a change over this fraction of the unmasked picture at once is light, not motion
GLOBAL_CHANGE_FRACTION = 0.5
BACKGROUND_TAU_S = 5.0
#: below this mean brightness (of 255) gain normalisation would only amplify noise
MIN_MEAN_FOR_GAIN = 8.0
#: a gain closer to 1 than this is none (255 x 0.01 = 2.55 grey levels at most, a tenth of the threshold)
GAIN_TOLERANCE = 0.01

log = logging.getLogger(__name__)

Polygon = Sequence[Tuple[float, float]]


@dataclass(frozen=True)
class MotionSettings:
    threshold: int = 25  # grey levels (of 255) a pixel must differ from the background
    min_area: float = 0.0005  # smallest moving region, fraction of the frame


@dataclass(frozen=True)
class MotionResult:
    motion: bool
    #: unmasked pixels that differ from the background, fraction of the unmasked picture
    changed_fraction: float
    #: largest moving region, fraction of the frame
    largest_area: float
    #: the background started again from this picture (first frame, new size, light change)
    reseeded: bool


def picture_size(image: FrameImage, width_px: int = WIDTH_PX) -> Tuple[int, int]:
    """(width, height) of the motion picture of ``image``: ``width_px`` wide at most, the frame's aspect."""
    height, width = int(image.shape[0]), int(image.shape[1])
    return min(width_px, width), max(1, round(height * min(width_px, width) / width))


def small_grey(image: FrameImage, width_px: int = WIDTH_PX) -> np.ndarray:
    """A grey uint8 picture of ``image`` ``width_px`` wide: the Y plane of NV12, else BGR to grey."""
    cv2 = opencv()

    size = picture_size(image, width_px)
    if isinstance(image, HostNv12Image):
        grey = image.nv12[:image.height]
    elif isinstance(image, DeviceNv12Image):
        small = image.small_grey(*size)  # scaled on the GPU: only the small picture comes to the host
        if small is not None:
            return small
        grey = image.nv12_host()[:image.height]  # an owner that cannot: the Y plane, downloaded once
    else:
        grey = image
    small = cv2.resize(grey, size, interpolation=cv2.INTER_LINEAR)  # scaled first: 1/36 of the pixels to convert
    return small if small.ndim == 2 else cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)


def _gaussian_kernel(size_px: int) -> np.ndarray:
    """The 1-D kernel GaussianBlur uses for ``size_px`` with sigma 0 (derived from the size)."""
    cv2 = opencv()

    return cv2.getGaussianKernel(size_px, 0, cv2.CV_32F)


def mask_raster(masks: Sequence[Polygon], width_px: int, height_px: int) -> np.ndarray:
    """uint8 ``(height_px, width_px)``: 1 where motion counts, 0 under a mask."""
    cv2 = opencv()

    keep = np.ones((height_px, width_px), np.uint8)
    for polygon in masks:
        points = np.array([[round(x * (width_px - 1)), round(y * (height_px - 1))] for x, y in polygon], np.int32)
        cv2.fillPoly(keep, [points], 0)
    return keep


class MotionDetector:
    """Motion of one camera; feed it every picture in time order (``detect``)."""

    def __init__(self, settings: MotionSettings = MotionSettings(), masks: Sequence[Polygon] = ()) -> None:
        self.settings = settings
        self.masks = tuple(tuple((float(x), float(y)) for x, y in polygon) for polygon in masks)
        self._background: Optional[np.ndarray] = None
        self._keep: Optional[np.ndarray] = None
        # derived from _keep once per picture size, not per frame (a masked mean or sum of the
        # whole raster cost more than the rest of the check together)
        self._keep_255: Optional[np.ndarray] = None
        self._keep_f32: Optional[np.ndarray] = None
        self._unmasked = 0
        self._last_s: Optional[float] = None
        self._blur_kernel = _gaussian_kernel(BLUR_PX)
        self._blur_taps = tuple(self._blur_kernel.ravel().tolist())  # as the GPU blur takes them, made once
        # The background's mean (unmasked pixels), followed as the background follows the
        # picture instead of measured on every check: a pass over the picture less. Following
        # it is exact but for float rounding, whose error stays below a few parts in a million
        # of the mean (each step keeps 1 - alpha of the last one's); it is measured afresh
        # whenever the background starts again.
        self._background_mean = 0.0
        self._device_blur = True  # False once blurring on the GPU failed: the host blurs from then on

    @property
    def masked_fraction(self) -> Optional[float]:
        """How much of the frame the masks cover (None before the first picture)."""
        return None if self._keep is None else 1.0 - float(self._keep.mean())

    def picture(self, image: FrameImage) -> np.ndarray:
        """What ``detect`` takes of ``image``: ``small_grey``, or for a frame in device memory the
        small picture already blurred there (float32), so the host starts at the difference."""
        if isinstance(image, DeviceNv12Image) and self._device_blur:
            try:
                blurred = image.small_blurred(*picture_size(image), self._blur_taps)
            except Exception as err:  # a faster path only: motion goes on without it
                log.warning("the motion picture cannot be blurred on the GPU (%s); blurring on the host", err)
                self._device_blur = False
                blurred = None
            if blurred is not None:
                return blurred
        return small_grey(image)

    def detect(self, grey: np.ndarray, now_s: float) -> MotionResult:
        """Motion in ``grey`` at ``now_s`` seconds (any monotonic clock): a uint8 ``small_grey``, or
        a float32 picture blurred already (``picture`` of a device frame)."""
        cv2 = opencv()

        # blur and float conversion in one pass: half the CPU of GaussianBlur then astype
        picture = (grey if grey.dtype == np.float32
                   else cv2.sepFilter2D(grey, cv2.CV_32F, self._blur_kernel, self._blur_kernel))
        if self._background is None or self._background.shape != picture.shape:
            self._set_keep(mask_raster(self.masks, picture.shape[1], picture.shape[0]))
            return self._reseed(picture, now_s)
        keep, unmasked = self._keep, self._unmasked
        if unmasked == 0:  # the whole frame is masked: never motion
            self._last_s = now_s
            return MotionResult(False, 0.0, 0.0, False)
        picture_mean = self._mean(picture)
        gain = self._gain(picture_mean)
        if gain != 1.0:
            # light is looked for before the gain too (clipped highlights defeat a gain); without
            # a gain the check after it is the same check
            changed_fraction = self._changed_fraction(picture)
            if changed_fraction > GLOBAL_CHANGE_FRACTION:
                return self._reseed(picture, now_s, changed_fraction)
            picture = picture * gain
        changed = self._changed(picture)
        changed_fraction = float(cv2.countNonZero(changed)) / unmasked
        if changed_fraction > GLOBAL_CHANGE_FRACTION:
            return self._reseed(picture, now_s, changed_fraction)
        largest_px = 0.0
        if changed_fraction > 0:
            grown = cv2.dilate(changed, None, iterations=DILATE_ITERATIONS) & keep
            contours, _ = cv2.findContours(grown, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
            # a region's pixel count: contourArea of a 1-pixel-wide region is 0
            largest_px = max((max(cv2.contourArea(c), float(len(c))) for c in contours), default=0.0)
        frame_px = picture.shape[0] * picture.shape[1]
        min_px = max(1.0, self.settings.min_area * frame_px)
        self._follow(picture, picture_mean * gain, now_s)
        return MotionResult(largest_px >= min_px, changed_fraction, largest_px / frame_px, False)

    def _set_keep(self, keep: np.ndarray) -> None:
        self._keep = keep
        self._unmasked = int(np.count_nonzero(keep))
        masked = self._unmasked < keep.size
        self._keep_255 = keep * np.uint8(255) if masked else None  # None: nothing masked, nothing to apply
        self._keep_f32 = keep.astype(np.float32) if masked else None

    def _gain(self, mean_now: float) -> float:
        """The factor that brings the picture to the background's mean brightness; 1.0 in the
        dark (it would only amplify noise) and within ``GAIN_TOLERANCE`` (it would move no
        pixel by more than a few grey levels, and the static scenes of most frames cost less)."""
        mean_background = self._background_mean
        if mean_now < MIN_MEAN_FOR_GAIN or mean_background < MIN_MEAN_FOR_GAIN:
            return 1.0
        gain = mean_background / mean_now
        return 1.0 if abs(gain - 1.0) <= GAIN_TOLERANCE else gain

    def _mean(self, picture: np.ndarray) -> float:
        """Mean of the unmasked pixels of a float32 picture."""
        cv2 = opencv()

        if self._keep_f32 is None:
            return float(cv2.mean(picture)[0])
        return float(cv2.sumElems(cv2.multiply(picture, self._keep_f32))[0]) / self._unmasked

    def _changed(self, picture: np.ndarray) -> np.ndarray:
        """uint8, non-zero where an unmasked pixel differs from the background by more than the threshold."""
        cv2 = opencv()

        changed = cv2.compare(cv2.absdiff(picture, self._background), float(self.settings.threshold), cv2.CMP_GT)
        return changed if self._keep_255 is None else cv2.bitwise_and(changed, self._keep_255)

    def _changed_fraction(self, picture: np.ndarray) -> float:
        cv2 = opencv()

        return float(cv2.countNonZero(self._changed(picture))) / self._unmasked

    def _reseed(self, picture: np.ndarray, now_s: float, changed_fraction: float = 0.0) -> MotionResult:
        self._background = picture.astype(np.float32, copy=True)
        self._background_mean = self._mean(self._background) if self._unmasked else 0.0  # all masked: never read
        self._last_s = now_s
        return MotionResult(False, changed_fraction, 0.0, True)

    def _follow(self, picture: np.ndarray, picture_mean: float, now_s: float) -> None:
        """The background moves towards ``picture`` (whose unmasked mean is ``picture_mean``)."""
        cv2 = opencv()

        elapsed_s = max(0.0, now_s - (self._last_s if self._last_s is not None else now_s))
        self._last_s = now_s
        alpha = 1.0 - math.exp(-elapsed_s / BACKGROUND_TAU_S)
        if alpha > 0:
            alpha = min(1.0, alpha)
            cv2.accumulateWeighted(picture, self._background, alpha)
            self._background_mean = (1.0 - alpha) * self._background_mean + alpha * picture_mean
