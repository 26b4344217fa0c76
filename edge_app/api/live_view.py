"""The MJPEG live view: which viewers may watch, and the parts they are sent.

A viewer always gets its headers and a first part at once: the newest frame, or a "no frame
yet" picture for a camera that has none. After that a part goes out at least every
``KEEPALIVE_S``, because writing is the only way a server learns that a viewer went away: a
view that never wrote held its worker thread and its live-view slot for ever, with the socket
in CLOSE-WAIT. Slots are counted per camera as well as in total, so viewers of one camera
(a dead one, say) cannot take live view away from the others.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Dict, Iterator, Optional, Tuple

import numpy as np

from edge_app.detect.annotate import encode_jpeg
from edge_app.opencv import opencv
from edge_app.reporting.protocol import AnalysedFrame, ApplianceReads, UnknownCamera

logger = logging.getLogger(__name__)

BOUNDARY = "frame"
POLL_S = 0.5  # how quickly a live view notices server shutdown
KEEPALIVE_S = 2.0  # the longest a viewer waits for a part: the last frame again, or the placeholder
PLACEHOLDER_SIZE = (640, 360)  # width, height of the "no frame yet" picture
#: the frame rates a viewer may ask for (``fps``)
MIN_STREAM_FPS, MAX_STREAM_FPS = 0.1, 30  # 30, not 30.0: the document shows it

Render = Callable[[AnalysedFrame], bytes]


class LiveViewSlots:
    """Bounds open live views in total and per camera; :meth:`acquire` says why it refused."""

    def __init__(self, max_total: int, max_per_camera: int):
        self.max_total = max_total
        self.max_per_camera = max_per_camera
        self._per_camera: Dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, camera_id: str) -> Optional[str]:
        """None when a slot was taken for ``camera_id``, else the reason (for a 503)."""
        with self._lock:
            if sum(self._per_camera.values()) >= self.max_total:
                return f"too many live views are open (at most {self.max_total}); close one and retry"
            if self._per_camera.get(camera_id, 0) >= self.max_per_camera:
                return (f"too many live views of camera {camera_id!r} are open (at most {self.max_per_camera}); "
                        "close one and retry")
            self._per_camera[camera_id] = self._per_camera.get(camera_id, 0) + 1
            return None

    def release(self, camera_id: str) -> None:
        with self._lock:
            left = self._per_camera.get(camera_id, 0) - 1
            if left > 0:
                self._per_camera[camera_id] = left
            else:
                self._per_camera.pop(camera_id, None)


def placeholder_jpeg(message: str = "no frame yet") -> bytes:
    """A dark grey picture saying ``message``, shown until a camera has a frame."""
    cv2 = opencv()
    width, height = PLACEHOLDER_SIZE
    image = np.full((height, width, 3), 48, np.uint8)
    scale, thickness = 1.2, 2
    (text_w, text_h), _ = cv2.getTextSize(message, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    origin = ((width - text_w) // 2, (height + text_h) // 2)
    cv2.putText(image, message, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, (220, 220, 220), thickness, cv2.LINE_AA)
    return encode_jpeg(image, 70)


def part(jpeg: bytes, frame: Optional[AnalysedFrame]) -> bytes:
    """One multipart part; frame headers only for a real frame."""
    head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n"
    if frame is not None:
        head += f"X-Frame-Id: {frame.frame_id}\r\nX-Frame-Timestamp: {frame.ts:.3f}\r\n"
    return head.encode("ascii") + b"\r\n" + jpeg + b"\r\n"


def _next_frame(reads: ApplianceReads, camera_id: str, last: Optional[AnalysedFrame],
                last_sent_at: float, stopping: threading.Event) -> Tuple[Optional[AnalysedFrame], bool]:
    """Wait for what to send next: (a newer frame, False), (None, True) for a keepalive of the
    last part, or (None, False) when stopping. A restarted camera counts its ids from 1 again,
    so a frame with another (id, ts) than the last one is new even when its id is smaller."""
    while not stopping.is_set():
        after_id = last.frame_id if last is not None else 0
        frame = reads.wait_frame(camera_id, after_id, POLL_S)
        if frame is None:
            latest = reads.latest_frame(camera_id)
            if latest is not None and (last is None or (latest.frame_id, latest.ts) != (last.frame_id, last.ts)):
                frame = latest
        if frame is not None:
            return frame, False
        if time.monotonic() - last_sent_at >= KEEPALIVE_S:
            return None, True
    return None, False


def mjpeg_parts(reads: ApplianceReads, camera_id: str, render: Render, fps: float,
                stopping: threading.Event, no_frame_jpeg: bytes) -> Iterator[bytes]:
    """The body of a live view, until the server stops, the camera goes or the viewer leaves."""
    min_interval_s = 1.0 / fps
    try:
        last = reads.latest_frame(camera_id)
        last_part = part(render(last), last) if last is not None else part(no_frame_jpeg, None)
        yield last_part  # at once: the viewer gets its headers even from a camera with no frame
        last_sent_at = time.monotonic()
        while not stopping.is_set():
            frame, keepalive = _next_frame(reads, camera_id, last, last_sent_at, stopping)
            if frame is not None:
                started = time.monotonic()
                last, last_part = frame, part(render(frame), frame)
                yield last_part
                last_sent_at = time.monotonic()
                # Waiting on the event rather than sleeping keeps shutdown prompt.
                stopping.wait(max(0.0, min_interval_s - (last_sent_at - started)))
            elif keepalive:
                yield last_part
                last_sent_at = time.monotonic()
        yield f"--{BOUNDARY}--\r\n".encode("ascii")
    except UnknownCamera:
        logger.info("live view of camera %r ended: the camera was removed", camera_id)
    except GeneratorExit:
        logger.debug("live view of camera %r closed by the viewer", camera_id)
        raise
