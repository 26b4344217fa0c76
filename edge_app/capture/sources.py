"""From a configured source string to an open frame source.

``edge_app.config.source_spec.parse_source`` turns ``cameras[].source`` (docs/configuration.md) into a ``SourceSpec``: which OpenCV backend
opens it, what string that backend gets, and whether it is live. ``open_source`` opens a spec and
returns a ``FrameSource``. Two kinds of failure are told apart because the camera treats them
differently:

* ``SourceError``: the source can never work as configured (unsupported scheme, GStreamer pipeline
  on an OpenCV without GStreamer). The camera goes to ``error`` and stops retrying.
* ``SourceUnavailable``: it may work later (camera offline, device not plugged in yet, file not
  there yet). The camera goes to ``reconnecting`` and retries with backoff.

RTSP goes over TCP by default: over UDP a lossy Wi-Fi link turns into smeared grey frames, while
TCP only adds latency. OpenCV reads FFmpeg options from the ``OPENCV_FFMPEG_CAPTURE_OPTIONS``
environment variable, process-wide; it is set with ``setdefault`` so an operator's own value
(``rtsp_transport;udp``) wins. It is set once, when this module is imported (on the main thread,
before the appliance starts any), never when a camera opens: setenv on a capture thread while
another thread reads the environment (each log line's timestamp does, through tzset) can crash
the process.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Protocol

import numpy as np

from edge_app.capture.synthetic import SyntheticSource
# The grammar lives with the configuration; it is re-exported here for the capture code.
from edge_app.config.source_spec import SourceError, SourceKind, SourceSpec
from edge_app.config.redact import mask_secrets
from edge_app.opencv import opencv

FFMPEG_OPTIONS_ENV = "OPENCV_FFMPEG_CAPTURE_OPTIONS"
FFMPEG_DEFAULT_OPTIONS = "rtsp_transport;tcp"
os.environ.setdefault(FFMPEG_OPTIONS_ENV, FFMPEG_DEFAULT_OPTIONS)

NO_GSTREAMER_MESSAGE = (
    "OpenCV here has no GStreamer support (PyPI wheels never do); csi:// and gst: sources need "
    "JetPack's system OpenCV: create the venv with --system-site-packages and do not install "
    "opencv-python"
)

MAX_FRAME_SIDE_PX = 8192


def frame_too_large(width: int, height: int) -> Optional[str]:
    """The camera error for a frame of ``width`` x ``height``, or None when it is acceptable."""
    if max(width, height) <= MAX_FRAME_SIDE_PX:
        return None
    return f"frames of {width}x{height} px are larger than the {MAX_FRAME_SIDE_PX} px per side this appliance accepts"


class SourceUnavailable(RuntimeError):
    """The source cannot be opened now; it may work on a later attempt."""


class FrameSource(Protocol):
    """An open source. ``read`` returns a BGR uint8 image, or None at end of file / on failure."""

    fps: float  # nominal frames per second; 0 when unknown

    def read(self) -> Optional[np.ndarray]:
        ...

    def release(self) -> None:
        ...


def opencv_has_gstreamer(build_info: str) -> bool:
    """Whether ``cv2.getBuildInformation()`` reports GStreamer support."""
    for line in build_info.splitlines():
        if line.strip().startswith("GStreamer:"):
            return "YES" in line.split(":", 1)[1].upper()
    return False


def check_backend(spec: SourceSpec, build_info: Optional[str] = None) -> None:
    """Raise SourceError when this OpenCV can never open the spec (no GStreamer for csi/gst)."""
    if not spec.needs_gstreamer:
        return
    if build_info is None:
        cv2 = opencv()

        build_info = cv2.getBuildInformation()
    if not opencv_has_gstreamer(build_info):
        raise SourceError(NO_GSTREAMER_MESSAGE)


class OpenCVSource:
    """A ``cv2.VideoCapture`` behind the FrameSource interface."""

    def __init__(self, capture: Any, live: bool) -> None:
        cv2 = opencv()

        self._capture = capture
        self.live = live
        self.fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)

    def read(self) -> Optional[np.ndarray]:
        ok, image = self._capture.read()
        if not ok or image is None:
            return None
        too_large = frame_too_large(image.shape[1], image.shape[0])
        if too_large:
            raise SourceError(too_large)
        return image

    def grab(self) -> bool:
        """Decode the next frame without converting it to BGR or copying it out (a frame that
        will not be analysed); False at the end or on failure, like ``read`` returning None."""
        return bool(self._capture.grab())

    def release(self) -> None:
        self._capture.release()


def open_source(spec: SourceSpec, open_timeout_s: float = 10.0, read_timeout_s: float = 10.0) -> FrameSource:
    """Open a spec. Raises SourceError (never works) or SourceUnavailable (try again later).

    The timeouts reach FFmpeg (RTSP, HTTP, files) and newer GStreamer backends, so a dead stream
    makes ``read`` return instead of hanging; backends that ignore them are covered by the
    camera's watchdog.
    """
    if spec.kind is SourceKind.TEST:
        opts = spec.options
        return SyntheticSource(spec.target, int(opts["width"]), int(opts["height"]), float(opts["fps"]))
    check_backend(spec)
    cv2 = opencv()

    if spec.kind is SourceKind.FILE and not os.path.isfile(spec.target):
        raise SourceUnavailable(f"file {spec.target} does not exist")
    if spec.kind is SourceKind.V4L2 and not os.path.exists(spec.target):
        raise SourceUnavailable(f"device {spec.target} does not exist (not plugged in?)")
    api = {
        SourceKind.V4L2: cv2.CAP_V4L2,
        SourceKind.CSI: cv2.CAP_GSTREAMER,
        SourceKind.GSTREAMER: cv2.CAP_GSTREAMER,
    }.get(spec.kind, cv2.CAP_FFMPEG)
    params = [
        cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, max(1, int(open_timeout_s * 1000)),
        cv2.CAP_PROP_READ_TIMEOUT_MSEC, max(1, int(read_timeout_s * 1000)),
    ]
    if api == cv2.CAP_FFMPEG and hasattr(cv2, "CAP_PROP_N_THREADS"):
        # FFmpeg's own decode threads cost more CPU per frame than they save on an edge box
        # whose cores the detector needs; one thread still decodes 1080p H.264 at ~290 fps.
        params += [cv2.CAP_PROP_N_THREADS, 1]
    capture = cv2.VideoCapture(spec.target, api, params)
    if not capture.isOpened() and api != cv2.CAP_FFMPEG:
        # Older V4L2/GStreamer backends refuse to open when given parameters they do not know.
        capture.release()
        capture = cv2.VideoCapture(spec.target, api)
    if not capture.isOpened():
        capture.release()
        raise SourceUnavailable(f"cannot open {mask_secrets(spec.target)}")
    # Refused before the first decode where the backend knows the size already.
    too_large = frame_too_large(int(capture.get(cv2.CAP_PROP_FRAME_WIDTH) or 0), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0))
    if too_large:
        capture.release()
        raise SourceError(too_large)
    return OpenCVSource(capture, spec.live)
