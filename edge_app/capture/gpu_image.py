"""Frames that are not BGR numpy arrays: NV12 images in host or device memory.

Hardware decoders deliver NV12 (a full-resolution Y plane, then one half-resolution plane of
interleaved U and V). The GPU letterbox kernel reads NV12 directly, so a frame decoded on the GPU
reaches the engine input without ever visiting the host. Everything else that wants pixels
(annotated snapshots, MJPEG live view, event snapshots, CPU detectors) asks through one accessor,
:func:`bgr_image`, which converts (and for device memory downloads) only then, once per frame.

Colours follow OpenCV's ``COLOR_YUV2BGR_NV12``: BT.601, limited range, chroma shared by each 2x2
block. :func:`nv12_to_bgr_reference` is that conversion in plain numpy with OpenCV's own integer
coefficients, the reference the GPU kernel is tested against.

This module sits below capture and detect (both use it) and imports neither.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from edge_app.opencv import opencv

# OpenCV's fixed-point BT.601 coefficients (color_yuv.simd.hpp), 20 fractional bits
_SHIFT = 20
_CY = 1220542
_CUB = 2116026
_CUG = -409993
_CVG = -852492
_CVR = 1673527


def nv12_hw(nv12: np.ndarray) -> Tuple[int, int]:
    """(height, width) of the image held in a packed ``(H * 3 / 2, W)`` NV12 array."""
    # rows = 3 * H / 2 with H even is exactly "a positive multiple of 3"
    if (nv12.ndim != 2 or nv12.dtype != np.uint8 or nv12.shape[0] % 3 or nv12.shape[1] % 2
            or min(nv12.shape) == 0):
        raise ValueError(f"an NV12 image is a uint8 (H*3/2, W) array with even H and W, got "
                         f"{nv12.dtype} {nv12.shape}")
    return nv12.shape[0] * 2 // 3, int(nv12.shape[1])


def nv12_to_bgr_reference(nv12: np.ndarray) -> np.ndarray:
    """BGR uint8 image of a packed NV12 array, computed like OpenCV's ``COLOR_YUV2BGR_NV12``."""
    height, width = nv12_hw(nv12)
    y = nv12[:height].astype(np.int64)
    uv = nv12[height:].reshape(height // 2, width // 2, 2).astype(np.int64) - 128
    u = np.repeat(np.repeat(uv[..., 0], 2, axis=0), 2, axis=1)
    v = np.repeat(np.repeat(uv[..., 1], 2, axis=0), 2, axis=1)
    luma = np.maximum(y - 16, 0) * _CY
    half = 1 << (_SHIFT - 1)
    bgr = np.empty((height, width, 3), dtype=np.uint8)
    bgr[..., 0] = np.clip((luma + half + _CUB * u) >> _SHIFT, 0, 255)
    bgr[..., 1] = np.clip((luma + half + _CVG * v + _CUG * u) >> _SHIFT, 0, 255)
    bgr[..., 2] = np.clip((luma + half + _CVR * v) >> _SHIFT, 0, 255)
    return bgr


def nv12_to_bgr(nv12: np.ndarray) -> np.ndarray:
    """BGR of a packed NV12 array: OpenCV when installed (fast), else the numpy reference."""
    nv12_hw(nv12)
    try:
        cv2 = opencv()
    except ImportError:
        return nv12_to_bgr_reference(nv12)
    return cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12)


class _LazyBgr:
    """The BGR conversion of one image, made on first use and kept (several viewers share it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bgr: Optional[np.ndarray] = None
        self.conversions = 0

    def get(self, make: Callable[[], np.ndarray]) -> np.ndarray:
        with self._lock:
            if self._bgr is None:
                self._bgr = make()
                self._bgr.setflags(write=False)
                self.conversions += 1
            return self._bgr


class HostNv12Image:
    """An NV12 frame in host memory, as a GStreamer or FFmpeg decoder hands it over."""

    def __init__(self, nv12: np.ndarray) -> None:
        self.height, self.width = nv12_hw(nv12)
        self.nv12 = np.ascontiguousarray(nv12)
        self._bgr = _LazyBgr()

    @property
    def shape(self) -> Tuple[int, int, int]:
        """The shape of the BGR image it stands for, so size checks read it like an ndarray."""
        return self.height, self.width, 3

    def bgr(self) -> np.ndarray:
        return self._bgr.get(lambda: nv12_to_bgr(self.nv12))

    @property
    def conversions(self) -> int:
        return self._bgr.conversions


@dataclass(frozen=True)
class Nv12Planes:
    """Where an NV12 image lies in device memory: plane addresses and row pitches in bytes."""

    y_ptr: int
    uv_ptr: int
    y_pitch: int
    uv_pitch: int
    width: int
    height: int

    @property
    def packed(self) -> bool:
        """True when the planes form one ``(H * 3 / 2, W)`` block (one flat copy moves it)."""
        return (self.y_pitch == self.width and self.uv_pitch == self.width
                and self.uv_ptr == self.y_ptr + self.width * self.height)

    @property
    def nbytes(self) -> int:
        return self.width * self.height * 3 // 2


#: copies a packed NV12 image of ``planes`` into a host array of shape (H * 3 / 2, W)
Downloader = Callable[[Nv12Planes, np.ndarray], None]
#: ``(planes, width_px, height_px)`` -> the Y plane scaled down on the device, a uint8 host array
Shrinker = Callable[[Nv12Planes, int, int], np.ndarray]


class DeviceNv12Image:
    """An NV12 frame in device memory (a GPU decoder's output, copied out of its surface).

    ``keepalive`` holds whatever owns the memory (a buffer of the decoder's frame pool): the
    memory is reused only once this image is gone. ``download`` fills a host array; it is called
    at most once, the first time someone asks for :meth:`bgr` or :meth:`nv12_host`.
    """

    def __init__(self, planes: Nv12Planes, download: Downloader, keepalive: Any = None,
                 device_index: int = 0, shrink: Optional[Shrinker] = None) -> None:
        if planes.width % 2 or planes.height % 2 or planes.width <= 0 or planes.height <= 0:
            raise ValueError(f"an NV12 image has an even, positive size, got {planes.width}x{planes.height}")
        self.planes = planes
        self.width, self.height = planes.width, planes.height
        self.device_index = device_index
        self._download = download
        self._shrink = shrink
        self._keepalive = keepalive
        self._host = _LazyBgr()
        self._bgr = _LazyBgr()

    @property
    def shape(self) -> Tuple[int, int, int]:
        return self.height, self.width, 3

    def nv12_host(self) -> np.ndarray:
        """The frame copied to the host as a packed NV12 array (downloaded once)."""
        def fetch() -> np.ndarray:
            host = np.empty((self.height * 3 // 2, self.width), dtype=np.uint8)
            self._download(self.planes, host)
            return host
        return self._host.get(fetch)

    def bgr(self) -> np.ndarray:
        return self._bgr.get(lambda: nv12_to_bgr(self.nv12_host()))

    def small_grey(self, width_px: int, height_px: int) -> Optional[np.ndarray]:
        """The Y plane scaled down to ``width_px`` x ``height_px`` on the device, only that copied
        to the host (motion gating); None where the frame's owner cannot do it (then download)."""
        if self._shrink is None:
            return None
        return self._shrink(self.planes, width_px, height_px)

    def small_blurred(self, width_px: int, height_px: int, taps: np.ndarray) -> Optional[np.ndarray]:
        """``small_grey`` blurred with the separable ``taps`` on the device as well, float32 (the
        motion detector's picture); None where the frame's owner cannot do it."""
        blurred = getattr(self._shrink, "blurred", None)
        if blurred is None:
            return None
        return blurred(self.planes, width_px, height_px, taps)

    @property
    def downloads(self) -> int:
        """How many times this frame was copied to the host (0 or 1)."""
        return self._host.conversions

    @property
    def __cuda_array_interface__(self) -> dict:
        """The Y plane followed by the UV plane as one (H * 3 / 2, W) array; packed images only."""
        if not self.planes.packed:
            raise AttributeError("a pitched NV12 image has no single-array view")
        return {"version": 3, "shape": (self.height * 3 // 2, self.width), "strides": None,
                "typestr": "|u1", "data": (self.planes.y_ptr, False), "stream": None}


FrameImage = Union[np.ndarray, HostNv12Image, DeviceNv12Image]


def bgr_image(image: FrameImage) -> np.ndarray:
    """The BGR uint8 pixels of any frame image; NV12 is converted (and downloaded) on first use."""
    if isinstance(image, np.ndarray):
        return image
    if isinstance(image, (HostNv12Image, DeviceNv12Image)):
        return image.bgr()
    # an image behind privacy masks (edge_app.privacy.images) masks its pixels in its bgr()
    convert = getattr(image, "bgr", None)
    if callable(convert):
        return convert()
    raise TypeError(f"not a frame image: {type(image).__name__}")


def image_hw(image: FrameImage) -> Tuple[int, int]:
    """(height, width) of any frame image, without converting or downloading it."""
    return int(image.shape[0]), int(image.shape[1])
