"""The tracker's child process: its loop, and the messages it and the appliance exchange.

Messages on a ``multiprocessing`` pipe, one request answered at a time: ``("new", key, settings,
first_id, areas or None)``, ``("update", key, detections as an (N, 6) float64 buffer, ts)``,
``("place", key, detections, ts, (width, height), label names or None when unchanged)``,
``("expire", key, now)``, ``("age", key, now)``, ``("reset", key)``, ``("drop", key)``; every
answer but ``drop``'s is a ``TrackerState`` as a tuple, its ids as an int64 buffer, and for
``place`` and ``age`` with the zone changes and crossings after it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.track.placement import CameraPlacement, expire_and_place, pack_placed, track_and_place
from edge_app.track.tracker import Tracker

@dataclass(frozen=True)
class TrackerState:
    """What a request leaves behind: the ids of an update, and what the parent keeps to answer
    ``len``, ``removed_ids`` and ``active_ids`` without asking."""

    ids: Optional[np.ndarray]
    removed_ids: Tuple[int, ...]
    tracks: int
    active_ids: Tuple[int, ...]
    next_id: int


def pack_state(tracker: Tracker, ids: Optional[np.ndarray] = None) -> tuple:
    # Plain tuples and bytes: they pickle several times faster than a dataclass and arrays, and
    # the parent's share of a request is what still holds its interpreter lock.
    return (None if ids is None else ids.tobytes(), tracker.removed_ids, len(tracker), tracker.active_ids(),
            tracker.next_id)


def unpack_state(answer: tuple) -> TrackerState:
    ids, removed, tracks, active, next_id = answer
    return TrackerState(None if ids is None else np.frombuffer(ids, np.int64), removed, tracks, active, next_id)


def pack_detections(detections: Detections) -> bytes:
    """Boxes, scores and classes of a frame as one ``(N, 6)`` float64 buffer (class ids are exact in it)."""
    rows = np.empty((len(detections), 6), np.float64)
    rows[:, :4] = detections.xyxy
    rows[:, 4] = detections.confidence
    rows[:, 5] = detections.class_id
    return rows.tobytes()


def unpack_detections(packed: bytes, labels: Sequence[str] = ()) -> Detections:
    rows = np.frombuffer(packed, np.float64).reshape(-1, 6)
    return Detections(rows[:, :4], rows[:, 4], rows[:, 5].astype(np.int32), labels)


@dataclass
class _Camera:
    """What the child holds of one camera: its tracker and, with areas, its zones and lines."""

    tracker: Tracker
    placement: Optional[CameraPlacement]
    labels: Sequence[str] = ()


def _placed(camera: _Camera, message: tuple) -> tuple:
    _, _, packed, ts, frame_size, labels = message
    if labels is not None:
        camera.labels = labels
    ids, placed = track_and_place(camera.tracker, camera.placement, unpack_detections(packed, camera.labels), ts,
                                  frame_size)
    return pack_state(camera.tracker, ids), pack_placed(placed)


def child_main(conn: Any) -> None:
    """The child: trackers by key, one request at a time, until ``stop`` or the pipe closes."""
    trackers: Dict[str, _Camera] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        kind, key = message[0], message[1] if len(message) > 1 else None
        try:
            if kind == "stop":
                return
            if kind == "new":
                _, _, settings, first_id, areas = message
                camera = trackers[key] = _Camera(Tracker(settings, first_id=first_id),
                                                 None if areas is None else CameraPlacement(areas))
                answer: Any = pack_state(camera.tracker)
            elif kind == "update":
                tracker = trackers[key].tracker
                _, _, packed, ts = message
                ids = tracker.update(unpack_detections(packed), ts)
                answer = pack_state(tracker, ids)
            elif kind == "place":
                answer = _placed(_placing(trackers[key]), message)
            elif kind == "expire":
                tracker = trackers[key].tracker
                tracker.expire(message[2])
                answer = pack_state(tracker)
            elif kind == "age":
                camera = _placing(trackers[key])
                placed = pack_placed(expire_and_place(camera.tracker, camera.placement, message[2]))
                answer = pack_state(camera.tracker), placed  # the state after the expiry
            elif kind == "reset":
                camera = trackers[key]
                if camera.placement is not None:
                    camera.placement.forget(camera.tracker.active_ids())
                camera.tracker.reset()
                answer = pack_state(camera.tracker)
            elif kind == "drop":
                trackers.pop(key, None)
                answer = None
            else:
                raise ValueError(f"unknown request {kind!r}")
            conn.send(("ok", answer))
        except Exception as exc:  # the request's fault (a bad timestamp): the parent raises it
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _placing(camera: _Camera) -> _Camera:
    if camera.placement is None:
        raise ValueError("this tracker was made without areas: nothing to place")
    return camera
