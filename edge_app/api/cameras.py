"""``/api/v1/cameras``: the camera list, snapshots, latest detections and the MJPEG live view.

Frames are drawn on and encoded here, on demand only. A small cache keyed by the frame shares
one encode between viewers of the same frame, so a second browser tab costs no extra CPU.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from flask import Blueprint, Response, jsonify, request

from edge_app.detect.annotate import draw_detections, encode_jpeg
from edge_app.http_server.errors import ApiError
from edge_app.api.live_view import BOUNDARY, LiveViewSlots, mjpeg_parts, placeholder_jpeg
from edge_app.http_server.server import SHUTDOWN_ENVIRON_KEY
from edge_app.api.request_models import SnapshotQuery, StreamQuery
from edge_app.api.routing import ResponseSpec, Route, binary, error, ref, register_routes
from edge_app.reporting.protocol import AnalysedFrame, ApplianceReads, CameraReport, UnknownCamera
from edge_app.config.schema import AppConfig

logger = logging.getLogger(__name__)

DEFAULT_STREAM_FPS = 10.0
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


@dataclass(frozen=True)
class CameraViews:
    """What the camera views of one app share: its read side, configuration, encode cache and live-view slots."""

    reads: ApplianceReads
    config: Callable[[], AppConfig]
    cache: JpegCache
    slots: LiveViewSlots
    no_frame_jpeg: bytes


def _frame_or_503(views: CameraViews, camera_id: str) -> AnalysedFrame:
    frame = views.reads.latest_frame(camera_id)
    if frame is None:
        raise ApiError(503, f"camera {camera_id!r} has no analysed frame yet", headers=RETRY_AFTER)
    return frame


def list_cameras(views: CameraViews) -> Response:
    return jsonify([camera.to_dict() for camera in views.reads.cameras()])


def get_camera(views: CameraViews, camera_id: str) -> Response:
    for camera in views.reads.cameras():
        if camera.id == camera_id:
            return jsonify(camera.to_dict())
    raise UnknownCamera(camera_id)


def snapshot(views: CameraViews, query: SnapshotQuery, camera_id: str) -> Response:
    settings = views.config().snapshots
    annotate = settings.annotate if query.annotate is None else query.annotate
    quality = settings.jpeg_quality if query.quality is None else query.quality
    frame = _frame_or_503(views, camera_id)
    response = Response(views.cache.render(frame, annotate, quality), mimetype="image/jpeg")
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Id"] = str(frame.frame_id)
    response.headers["X-Frame-Timestamp"] = f"{frame.ts:.3f}"
    response.headers["Content-Disposition"] = f'inline; filename="{camera_id}-{frame.frame_id}.jpg"'
    return response


def detections(views: CameraViews, camera_id: str) -> Response:
    payload: Optional[Dict[str, Any]] = views.reads.latest_detections(camera_id)
    if payload is None:
        raise ApiError(503, f"camera {camera_id!r} has no detections yet", headers=RETRY_AFTER)
    return jsonify(payload)


def stream(views: CameraViews, query: StreamQuery, camera_id: str) -> Response:
    settings = views.config().snapshots
    annotate = True if query.annotate is None else query.annotate
    quality = settings.jpeg_quality if query.quality is None else query.quality
    fps = DEFAULT_STREAM_FPS if query.fps is None else query.fps
    views.reads.latest_frame(camera_id)  # raises UnknownCamera (404) before the stream starts
    refused = views.slots.acquire(camera_id)
    if refused:
        raise ApiError(503, refused, headers=RETRY_AFTER)
    released = threading.Event()

    def release_slot() -> None:
        if not released.is_set():
            released.set()
            views.slots.release(camera_id)

    stopping = request.environ.get(SHUTDOWN_ENVIRON_KEY) or threading.Event()

    def render(frame: AnalysedFrame) -> bytes:
        return views.cache.render(frame, annotate, quality)

    response = Response(
        mjpeg_parts(views.reads, camera_id, render, fps, stopping, views.no_frame_jpeg),
        content_type=f"multipart/x-mixed-replace; boundary={BOUNDARY}",
    )
    # call_on_close runs even when the body was never iterated, unlike a generator's finally.
    response.call_on_close(release_slot)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # nginx in front must not buffer a live view
    return response


_UNKNOWN = error("Unknown camera")
_BAD_QUERY = error("Bad query parameter")

#: the endpoint is ``cameras.<view name>`` (app.QUERY_TOKEN_ENDPOINTS names two)
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/cameras", list_cameras, "All cameras", "cameras",
          {200: ResponseSpec("Cameras", List[CameraReport])}),
    Route("GET", "/api/v1/cameras/<camera_id>", get_camera, "One camera", "cameras",
          {200: ResponseSpec("Camera", CameraReport), 404: _UNKNOWN}),
    Route("GET", "/api/v1/cameras/<camera_id>/snapshot.jpg", snapshot, "The latest analysed frame", "cameras",
          {200: binary("image/jpeg", "JPEG image"), 400: _BAD_QUERY, 404: _UNKNOWN, 503: error("No analysed frame yet")},
          query=SnapshotQuery),
    Route("GET", "/api/v1/cameras/<camera_id>/detections", detections, "The latest detections message", "cameras",
          {200: ResponseSpec("Detections", ref("DetectionsMessage")), 404: _UNKNOWN, 503: error("No detections yet")}),
    Route("GET", "/api/v1/cameras/<camera_id>/stream.mjpg", stream, "Annotated live view", "cameras",
          {200: binary("multipart/x-mixed-replace", "A stream of JPEG parts"), 400: _BAD_QUERY, 404: _UNKNOWN,
           503: error("Too many live views are open, in total or of this camera")},
          query=StreamQuery),
)


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
    views = CameraViews(reads, config_getter, JpegCache(), LiveViewSlots(max_live_streams, max_live_streams_per_camera),
                        placeholder_jpeg())
    return register_routes(bp, ROUTES, views)
