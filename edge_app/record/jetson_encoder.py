"""The Jetson Orin NX / AGX encoder for masked recordings: GStreamer ``nvv4l2h264enc`` in a child.

The masked pictures go as raw I420 into ``gst-launch-1.0``'s standard input; the hardware encodes
them (``nvvidconv`` puts them in NVMM memory, ``nvv4l2h264enc`` encodes, ``h264parse`` aligns
the output on access units) and the H.264 byte stream comes back on its standard output, read by
a thread and cut into pictures. The command line is a list built only from checked integers (the
picture size, the frame rate, the keyframe interval): no text of the configuration or of a camera
ever reaches it, and no shell runs it.

``gst-launch`` cannot force a keyframe where the source had one, so the encoder makes one every
``gop_frames`` pictures (the source's nominal GOP, a second by default); clips and segments still
start at keyframes of the output, which are marked from the stream itself.
"""
from __future__ import annotations

import collections
import logging
import queue
import shutil
import subprocess
import threading
from typing import Deque, List, Optional

import numpy as np

from edge_app.opencv import opencv
from edge_app.record.h264_units import split_access_units
from edge_app.record.picture_encoders import EncodedPicture

log = logging.getLogger(__name__)

GST_LAUNCH = "gst-launch-1.0"
READ_BYTES = 1 << 16
FLUSH_TIMEOUT_S = 10.0
MAX_SIDE_PX = 4096
MAX_FPS = 120
#: bits per second for each pixel of a second's pictures: about 8.6 Mbit/s at 1080p25
BITRATE_PIXELS_PER_BIT = 6


def _checked(name: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")
    return value


def gst_arguments(width_px: int, height_px: int, fps: int, gop_frames: int) -> List[str]:
    """``gst-launch-1.0``'s argument list (without the program) for this picture size and rate."""
    width = _checked("width_px", width_px, 16, MAX_SIDE_PX)
    height = _checked("height_px", height_px, 16, MAX_SIDE_PX)
    rate = _checked("fps", fps, 1, MAX_FPS)
    gop = _checked("gop_frames", gop_frames, 1, 10 * MAX_FPS)
    if width % 2 or height % 2:
        raise ValueError(f"an I420 picture has even sides, not {width}x{height}")
    bitrate = min(50_000_000, width * height * rate // BITRATE_PIXELS_PER_BIT)
    return ["-q",
            "fdsrc", "fd=0", f"blocksize={width * height * 3 // 2}", "!",
            "rawvideoparse", f"width={width}", f"height={height}", "format=i420", f"framerate={rate}/1", "!",
            "nvvidconv", "!", "video/x-raw(memory:NVMM),format=NV12", "!",
            "nvv4l2h264enc", "insert-sps-pps=true", "insert-aud=true", f"idrinterval={gop}",
            f"iframeinterval={gop}", f"bitrate={bitrate}", "maxperf-enable=true", "!",
            "h264parse", "!", "video/x-h264,stream-format=byte-stream,alignment=au", "!",
            "fdsink", "fd=1", "sync=false"]


class GstJetsonPictures:
    """Implements ``PictureEncoder`` with a ``gst-launch-1.0`` child; not thread-safe."""

    def __init__(self, width_px: int, height_px: int, fps: float, gop_frames: Optional[int] = None) -> None:
        program = shutil.which(GST_LAUNCH)
        if program is None:
            raise RuntimeError(f"{GST_LAUNCH} is not installed")
        rate = max(1, min(MAX_FPS, int(round(fps or 25))))
        arguments = gst_arguments(int(width_px), int(height_px), rate, int(gop_frames or rate))
        self._frame_bytes = width_px * height_px * 3 // 2
        self._child = subprocess.Popen([program, *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL)
        self._units: "queue.Queue" = queue.Queue()
        self._waiting: Deque[int] = collections.deque()
        self._reader = threading.Thread(target=self._read, name="record-mask-gst", daemon=True)
        self._reader.start()

    def encode(self, bgr: np.ndarray, pts: int, keyframe: bool) -> List[EncodedPicture]:
        self._waiting.append(pts)
        cv = opencv()
        i420 = cv.cvtColor(bgr, cv.COLOR_BGR2YUV_I420)
        try:
            self._child.stdin.write(i420.tobytes())
            self._child.stdin.flush()
        except (BrokenPipeError, ValueError) as err:
            raise RuntimeError(f"{GST_LAUNCH} ended: {err}") from None
        return self._ready()

    def flush(self) -> List[EncodedPicture]:
        try:
            self._child.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        self._reader.join(FLUSH_TIMEOUT_S)
        try:
            self._child.wait(FLUSH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._child.kill()
        out = self._ready()
        self._waiting.clear()
        return out

    def _ready(self) -> List[EncodedPicture]:
        out = []
        while True:
            try:
                unit = self._units.get_nowait()
            except queue.Empty:
                return out
            if not self._waiting:
                log.warning("the Jetson encoder returned more pictures than it was given")
                continue
            pts = self._waiting.popleft()
            out.append(EncodedPicture(unit.data, pts, pts, unit.keyframe))

    def _read(self) -> None:
        pending = b""
        while True:
            chunk = self._child.stdout.read1(READ_BYTES) if hasattr(self._child.stdout, "read1") \
                else self._child.stdout.read(READ_BYTES)
            if not chunk:
                break
            units = split_access_units(pending + chunk)
            # the last unit may still be arriving: kept until more bytes, or the end, show where it ends
            for unit in units[:-1]:
                self._units.put(unit)
            pending = units[-1].data if units else pending + chunk
        for unit in split_access_units(pending):
            self._units.put(unit)


__all__ = ["GstJetsonPictures", "gst_arguments"]
