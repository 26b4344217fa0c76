"""Trackers in child processes: each camera's tracking off the appliance's interpreter lock.

On an accelerator the appliance's ceiling is the Python work each analysed frame costs in its
one process (docs/gpu-benchmark.md): whatever the cores, the result lanes take turns on one
interpreter lock, and the tracker's update is the largest single part of that work. Here the
trackers live in ``tracking.processes`` child processes instead (``TrackerProcesses``), a
camera's tracker always in the same one; the camera's analysis holds a ``RemoteTracker`` with
the interface of ``Tracker`` and waits for each answer without the lock, so other cameras' work
goes on. The same ``Tracker`` runs in the child on the same detections in the same order, so
ids, and every event built on them, are those of a tracker in the appliance's process.

A child that exits or stops answering is given up and started afresh on the next request; its
cameras' trackers start over there with ids that go on counting up (never reused), and the
tracks they held are reported removed, so their events end as after a camera restart.

A camera whose analysis has zones or lines sends them along (``place_with``): the child then
places each frame's tracked objects in them too (``edge_app.track.placement``), the zone
tests and tripwire crossings off the appliance's interpreter lock as well.

Messages on a ``multiprocessing`` pipe, one request answered at a time: ``("new", key, settings,
first_id, areas or None)``, ``("update", key, detections as an (N, 6) float64 buffer, ts)``,
``("place", key, detections, ts, (width, height), label names or None when unchanged)``,
``("expire", key, now)``, ``("age", key, now)``, ``("reset", key)``, ``("drop", key)``; every
answer but ``drop``'s is a ``TrackerState`` as a tuple, its ids as an int64 buffer, and for
``place`` and ``age`` with the zone changes and crossings after it.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.track.placement import (Areas, CameraPlacement, Placed, expire_and_place, pack_placed, track_and_place,
                                      unpack_placed)
from edge_app.track.tracker import Tracker, TrackerSettings

log = logging.getLogger(__name__)

PROCESS_NAME = "edge-app-tracker"
START_TIMEOUT_S = 60.0   # a spawned child imports numpy and the tracker first: slow on a Jetson's SD card
ANSWER_TIMEOUT_S = 10.0  # one update takes milliseconds; ten seconds is a child that hangs


class TrackerUnavailable(RuntimeError):
    """The tracker's child process exited or stopped answering; the next request starts a new one."""


@dataclass(frozen=True)
class TrackerState:
    """What a request leaves behind: the ids of an update, and what the parent keeps to answer
    ``len``, ``removed_ids`` and ``active_ids`` without asking."""

    ids: Optional[np.ndarray]
    removed_ids: Tuple[int, ...]
    tracks: int
    active_ids: Tuple[int, ...]
    next_id: int


def _state(tracker: Tracker, ids: Optional[np.ndarray] = None) -> tuple:
    # Plain tuples and bytes: they pickle several times faster than a dataclass and arrays, and
    # the parent's share of a request is what still holds its interpreter lock.
    return (None if ids is None else ids.tobytes(), tracker.removed_ids, len(tracker), tracker.active_ids(),
            tracker.next_id)


def _unpack_state(answer: tuple) -> TrackerState:
    ids, removed, tracks, active, next_id = answer
    return TrackerState(None if ids is None else np.frombuffer(ids, np.int64), removed, tracks, active, next_id)


def _pack_detections(detections: Detections) -> bytes:
    """Boxes, scores and classes of a frame as one ``(N, 6)`` float64 buffer (class ids are exact in it)."""
    rows = np.empty((len(detections), 6), np.float64)
    rows[:, :4] = detections.xyxy
    rows[:, 4] = detections.confidence
    rows[:, 5] = detections.class_id
    return rows.tobytes()


def _unpack_detections(packed: bytes, labels: Sequence[str] = ()) -> Detections:
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
    ids, placed = track_and_place(camera.tracker, camera.placement, _unpack_detections(packed, camera.labels), ts,
                                  frame_size)
    return _state(camera.tracker, ids), pack_placed(placed)


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
                answer: Any = _state(camera.tracker)
            elif kind == "update":
                tracker = trackers[key].tracker
                _, _, packed, ts = message
                ids = tracker.update(_unpack_detections(packed), ts)
                answer = _state(tracker, ids)
            elif kind == "place":
                answer = _placed(_placing(trackers[key]), message)
            elif kind == "expire":
                tracker = trackers[key].tracker
                tracker.expire(message[2])
                answer = _state(tracker)
            elif kind == "age":
                camera = _placing(trackers[key])
                placed = pack_placed(expire_and_place(camera.tracker, camera.placement, message[2]))
                answer = _state(camera.tracker), placed  # the state after the expiry
            elif kind == "reset":
                camera = trackers[key]
                if camera.placement is not None:
                    camera.placement.forget(camera.tracker.active_ids())
                camera.tracker.reset()
                answer = _state(camera.tracker)
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


class TrackerHost:
    """One child process holding the trackers of some cameras; started on the first request."""

    def __init__(self, index: int, start_timeout_s: float = START_TIMEOUT_S,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        self.index = index
        self._start_timeout_s = start_timeout_s
        self._answer_timeout_s = answer_timeout_s
        self._answered = False  # whether the current child has answered a request yet
        self._lock = threading.Lock()  # one request at a time: lanes whose cameras share a child take turns
        self._process: Optional[Any] = None
        self._conn: Optional[Any] = None
        #: counts the children started; a tracker made in an earlier one must be made again
        self.generation = 0
        self.restarts = 0
        self._closed = False

    @property
    def pid(self) -> Optional[int]:
        return None if self._process is None else self._process.pid

    def request(self, generation: int, message: tuple, start: bool = True) -> Tuple[int, Any]:
        """Send ``message`` and wait for its answer: ``(generation, answer)``. With a child
        newer than ``generation`` nothing is sent: the answer is None and the caller makes
        its tracker again; so too without a child when ``start`` is false. Raises
        ``TrackerUnavailable`` (the child is given up) or ``ValueError`` (the child refused
        the request)."""
        with self._lock:
            if self._closed:
                raise TrackerUnavailable("the tracker processes are stopped")
            if self._process is None:
                if not start:
                    return self.generation, None
                self._start()
            if generation != self.generation:
                return self.generation, None
            conn = self._conn
            try:
                conn.send(message)
                # A new child answers its first request only once it has imported numpy and the tracker.
                wait_s = self._answer_timeout_s if self._answered else self._start_timeout_s
                if not conn.poll(wait_s):
                    raise TrackerUnavailable(f"tracker process {self.pid} did not answer in {wait_s:.0f} s")
                status, answer = conn.recv()
                self._answered = True
            except (EOFError, OSError, ValueError) as exc:
                self._give_up()
                raise TrackerUnavailable(f"tracker process exited ({type(exc).__name__}: {exc})") from exc
            except TrackerUnavailable:
                self._give_up()
                raise
        if status == "error":
            raise ValueError(answer)
        return generation, answer

    def close(self, timeout_s: float) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                try:
                    self._conn.send(("stop",))
                except (OSError, ValueError):
                    pass
            self._stop_process(timeout_s)

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # never fork a process with threads
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=child_main, args=(child_conn,), name=f"{PROCESS_NAME}-{self.index}",
                                        daemon=True)
        self._process.start()
        child_conn.close()
        self.generation += 1
        self._answered = False
        log.info("tracker process %d started (pid %s)", self.index, self._process.pid)

    def _give_up(self) -> None:
        log.warning("tracker process %d (pid %s) given up; its cameras' tracks start over", self.index, self.pid)
        self.restarts += 1
        self._stop_process(1.0)

    def _stop_process(self, timeout_s: float) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is not None:
            process.join(timeout_s)
            if process.is_alive():
                process.kill()
                process.join(1.0)
        if conn is not None:
            conn.close()


class RemoteTracker:
    """``Tracker``'s interface, for one camera, with the tracker in a ``TrackerHost``'s child."""

    def __init__(self, host: TrackerHost, key: str, settings: TrackerSettings) -> None:
        self.settings = settings
        self._host, self._key = host, key
        self._generation = -1  # made in no child yet
        self._state = TrackerState(None, (), 0, (), 1)
        self.removed_ids: Tuple[int, ...] = ()
        self._areas: Optional[Areas] = None
        self._labels_sent: Optional[Sequence[str]] = None  # the label names the child holds

    def place_with(self, areas: Areas) -> None:
        """Have the child place each frame in these zones and lines (``update_placed``,
        ``expire_placed``); before the first request."""
        if self._generation != -1:
            raise RuntimeError("place_with comes before the first request")
        self._areas = areas

    def __len__(self) -> int:
        return self._state.tracks

    def active_ids(self) -> Tuple[int, ...]:
        return self._state.active_ids

    def update(self, detections: Detections, timestamp_s: float) -> np.ndarray:
        state = self._ask("update", _pack_detections(detections), float(timestamp_s))
        return state.ids.copy()  # writable, as Tracker's are

    def expire(self, now_s: float) -> Tuple[int, ...]:
        return self._ask("expire", float(now_s)).removed_ids

    def update_placed(self, detections: Detections, timestamp_s: float,
                      frame_size: Tuple[int, int]) -> Tuple[np.ndarray, Placed]:
        """``update``, then the frame's tracked objects placed in the zones and lines in the child."""
        packed, ts, size = _pack_detections(detections), float(timestamp_s), (int(frame_size[0]), int(frame_size[1]))

        def message() -> tuple:
            labels = detections.labels
            if labels is self._labels_sent or labels == self._labels_sent:
                return "place", self._key, packed, ts, size, None
            self._labels_sent = labels
            return "place", self._key, packed, ts, size, tuple(labels)

        state, placed = self._ask_placed(message)
        return state.ids.copy(), placed

    def expire_placed(self, now_s: float) -> Placed:
        """``expire``, then the tracks that ended leave their zones in the child."""
        return self._ask_placed(lambda: ("age", self._key, float(now_s)))[1]

    def reset(self) -> None:
        try:
            self._ask("reset")
        except TrackerUnavailable:  # the child that held the tracks is gone, and they with it
            self._state = TrackerState(None, (), 0, (), self._state.next_id)
        self.removed_ids = ()

    def close(self) -> None:
        """Forget the tracker in the child (the camera's analysis ended)."""
        try:  # a child that is gone holds nothing: none is started to be told
            self._host.request(self._generation, ("drop", self._key), start=False)
        except (TrackerUnavailable, ValueError):
            pass  # a child that is gone holds nothing

    def _ask(self, kind: str, *arguments: Any) -> TrackerState:
        return self._request(lambda: (kind, self._key, *arguments), placed=False)[0]

    def _ask_placed(self, message: Callable[[], tuple]) -> Tuple[TrackerState, Placed]:
        if self._areas is None:
            raise RuntimeError("update_placed and expire_placed need place_with first")
        return self._request(message, placed=True)  # type: ignore[return-value]

    def _request(self, message: Callable[[], tuple], placed: bool) -> Tuple[TrackerState, Optional[Placed]]:
        lost: Tuple[int, ...] = ()
        remade = False
        for _ in range(2):  # once more after making the tracker in a new child
            try:
                generation, answer = self._host.request(self._generation, message())
            except TrackerUnavailable:
                self._forget_child()
                raise
            if answer is not None:
                break
            lost = self._state.active_ids  # the child that held them is gone: so are they
            remade, self._labels_sent = True, None
            _, made = self._host.request(generation, ("new", self._key, self.settings, self._state.next_id,
                                                      self._areas))
            self._generation = generation if made is not None else -1
        else:
            raise TrackerUnavailable("the tracker process was replaced twice in one request")
        state = _unpack_state(answer[0] if placed else answer)
        self._state = state
        self.removed_ids = tuple(dict.fromkeys(lost + state.removed_ids))
        if not placed:
            return state, None
        where = unpack_placed(answer[1])
        if remade and where.occupants is None:  # a new child: nobody is in its zones yet
            where = Placed(where.zone_changes, where.crossings, {})
        return state, where

    def _forget_child(self) -> None:
        # Tracks of the lost child end with the next answer (removed_ids): keep what they were.
        self._generation = -1
        self._labels_sent = None


class TrackerProcesses:
    """``count`` child processes; ``tracker(camera_id, settings)`` gives a camera its ``RemoteTracker``."""

    def __init__(self, count: int, start_timeout_s: float = START_TIMEOUT_S,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        if count < 1:
            raise ValueError("need at least one tracker process")
        self._hosts = [TrackerHost(i, start_timeout_s, answer_timeout_s) for i in range(count)]
        self._of_camera: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._made = 0  # trackers made so far: a camera analysed afresh gets a new key

    @property
    def count(self) -> int:
        return len(self._hosts)

    def pids(self) -> List[Optional[int]]:
        return [host.pid for host in self._hosts]

    def restarts(self) -> int:
        return sum(host.restarts for host in self._hosts)

    def tracker(self, camera_id: str, settings: TrackerSettings) -> RemoteTracker:
        with self._lock:
            index = self._of_camera.setdefault(camera_id, len(self._of_camera) % len(self._hosts))
            self._made += 1
            key = f"{camera_id}#{self._made}"
        return RemoteTracker(self._hosts[index], key, settings)

    def close(self, timeout_s: float = 5.0) -> None:
        for host in self._hosts:
            host.close(max(0.1, timeout_s / len(self._hosts)))


def default_tracker_processes(cpu_count: Optional[int] = None) -> int:
    """``tracking.processes: auto``: one child for every four cores, at most four; none below four
    cores, where a child only takes a core from the decoders and the model."""
    cores = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    return min(4, cores // 4)
