"""``/api/v1/cameras``: the camera list, snapshots, latest detections and the MJPEG live view.

Frames are drawn on and encoded here, on demand only. A small cache keyed by the frame shares
one encode between viewers of the same frame, so a second browser tab costs no extra CPU.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Optional, Tuple

from flask import Blueprint, Response, jsonify, request

from edge_app.detect.annotate import draw_detections, encode_jpeg
from edge_app.api.errors import ApiError
from edge_app.api.query_params import flag_arg, integer_arg, number_arg
from edge_app.api.live_view import BOUNDARY, LiveViewSlots, mjpeg_parts, placeholder_jpeg
from edge_app.api.server import SHUTDOWN_ENVIRON_KEY
from edge_app.reporting.protocol import AnalysedFrame, ApplianceReads, UnknownCamera
from edge_app.config.schema import AppConfig

logger = logging.getLogger(__name__)

DEFAULT_STREAM_FPS = 10.0
MAX_STREAM_FPS = 30.0
RETRY_AFTER = {"Retry-After": "1"}


class JpegCache:
    """The last few encoded frames, so concurrent viewers of one frame share a single encode."""

    def __init__(self, max_entries: int = 8):
        self._max_entries = max_entries
        self._entries: "OrderedDict[Tuple[Any, ...], bytes]" = OrderedDict()
        self._lock = threading.Lock()

    def render(self, frame: AnalysedFrame, annotate: bool, quality: int) -> bytes:
        # ts is part of the key because frame ids start again at 1 when a camera restarts.
        key = (frame.camera_id, frame.frame_id, frame.ts, annotate, quality)
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None:
                self._entries.move_to_end(key)
                return cached
        image = draw_detections(frame.bgr(), frame.detections) if annotate else frame.bgr()
        jpeg = encode_jpeg(image, quality)
        with self._lock:
            self._entries[key] = jpeg
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return jpeg


def cameras_blueprint(
    reads: ApplianceReads,
    config_getter: Callable[[], AppConfig],
    max_live_streams: int = 32,
    max_live_streams_per_camera: int = 8,
) -> Blueprint:
    """``max_live_streams`` bounds open MJPEG views (``max_live_streams_per_camera`` those of one
    camera): each holds an HTTP worker thread, and the rest of the API must stay reachable
    however many browser tabs are left open."""
    bp = Blueprint("cameras", __name__)
    cache = JpegCache()
    slots = LiveViewSlots(max_live_streams, max_live_streams_per_camera)
    no_frame_jpeg = placeholder_jpeg()

    def frame_or_503(camera_id: str) -> AnalysedFrame:
        frame = reads.latest_frame(camera_id)
        if frame is None:
            raise ApiError(503, f"camera {camera_id!r} has no analysed frame yet", headers=RETRY_AFTER)
        return frame

    @bp.get("/api/v1/cameras")
    def list_cameras() -> Response:
        return jsonify([camera.to_dict() for camera in reads.cameras()])

    @bp.get("/api/v1/cameras/<camera_id>")
    def get_camera(camera_id: str) -> Response:
        for camera in reads.cameras():
            if camera.id == camera_id:
                return jsonify(camera.to_dict())
        raise UnknownCamera(camera_id)

    @bp.get("/api/v1/cameras/<camera_id>/snapshot.jpg")
    def snapshot(camera_id: str) -> Response:
        settings = config_getter().snapshots
        annotate = flag_arg(request.args, "annotate", settings.annotate)
        quality = integer_arg(request.args, "quality", settings.jpeg_quality, 1, 100)
        frame = frame_or_503(camera_id)
        response = Response(cache.render(frame, annotate, quality), mimetype="image/jpeg")
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Id"] = str(frame.frame_id)
        response.headers["X-Frame-Timestamp"] = f"{frame.ts:.3f}"
        response.headers["Content-Disposition"] = f'inline; filename="{camera_id}-{frame.frame_id}.jpg"'
        return response

    @bp.get("/api/v1/cameras/<camera_id>/detections")
    def detections(camera_id: str) -> Response:
        payload: Optional[Dict[str, Any]] = reads.latest_detections(camera_id)
        if payload is None:
            raise ApiError(503, f"camera {camera_id!r} has no detections yet", headers=RETRY_AFTER)
        return jsonify(payload)

    @bp.get("/api/v1/cameras/<camera_id>/stream.mjpg")
    def stream(camera_id: str) -> Response:
        settings = config_getter().snapshots
        annotate = flag_arg(request.args, "annotate", True)
        quality = integer_arg(request.args, "quality", settings.jpeg_quality, 1, 100)
        fps = number_arg(request.args, "fps", DEFAULT_STREAM_FPS, 0.1, MAX_STREAM_FPS)
        reads.latest_frame(camera_id)  # raises UnknownCamera (404) before the stream starts
        refused = slots.acquire(camera_id)
        if refused:
            raise ApiError(503, refused, headers=RETRY_AFTER)
        released = threading.Event()

        def release_slot() -> None:
            if not released.is_set():
                released.set()
                slots.release(camera_id)

        stopping = request.environ.get(SHUTDOWN_ENVIRON_KEY) or threading.Event()

        def render(frame: AnalysedFrame) -> bytes:
            return cache.render(frame, annotate, quality)

        response = Response(
            mjpeg_parts(reads, camera_id, render, fps, stopping, no_frame_jpeg),
            content_type=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
        )
        # call_on_close runs even when the body was never iterated, unlike a generator's finally.
        response.call_on_close(release_slot)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Accel-Buffering"] = "no"  # nginx in front must not buffer a live view
        return response

    return bp
