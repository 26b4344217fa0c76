"""Per-camera lanes: each camera's results handled in order on one of a few threads, cameras side by side.

After the model, a frame's work is its camera's alone: tracking, zones and lines, events,
snapshots and MQTT messages read and change only that camera's state. One publish thread doing
all of it for every camera is a serial part whose cost grows with what the cameras see; lanes
let the cameras' work overlap (JPEG encoding, numpy and socket writes let go of the interpreter
lock, and another thread runs meanwhile). A camera always goes to the same lane, so its
results keep their order; a lane's queue is bounded, so a lane that falls behind holds up the
publish thread, and with it the model, instead of piling up stale frames.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Dict, List, Optional

log = logging.getLogger(__name__)

#: results a lane may hold before the publish thread waits for it
LANE_DEPTH = 8


class CameraLanes:
    """``lanes`` threads named ``<name>:lane<i>``; ``submit(camera_id, work)`` runs ``work`` on the camera's lane."""

    def __init__(self, lanes: int, name: str, on_error: Callable[[str], None], depth: int = LANE_DEPTH) -> None:
        if lanes < 1:
            raise ValueError("lanes must be >= 1")
        self._on_error = on_error  # told the camera whose work raised (the pipeline counts and logs it)
        self._queues: List["queue.Queue[Optional[tuple]]"] = [queue.Queue(maxsize=depth) for _ in range(lanes)]
        self._of_camera: Dict[str, int] = {}
        self._threads = [threading.Thread(target=self._run, args=(q,), name=f"{name}:lane{i}", daemon=True)
                         for i, q in enumerate(self._queues)]
        for thread in self._threads:
            thread.start()

    @property
    def lanes(self) -> int:
        return len(self._queues)

    def lane_of(self, camera_id: str) -> int:
        """The camera's lane: the next one round the ring the first time it is seen, the same after."""
        lane = self._of_camera.get(camera_id)
        if lane is None:  # only the publish thread assigns: no lock
            lane = self._of_camera[camera_id] = len(self._of_camera) % len(self._queues)
        return lane

    def submit(self, camera_id: str, work: Callable[[], None]) -> None:
        """Queue ``work`` on the camera's lane; waits while that lane is full."""
        self._queues[self.lane_of(camera_id)].put((camera_id, work))

    def stop(self, timeout_s: float) -> None:
        """Let the lanes finish what they hold, then end them (within ``timeout_s`` in all)."""
        for q in self._queues:
            try:
                q.put(None, timeout=timeout_s / len(self._queues))
            except queue.Full:  # a lane stuck in its work: it is a daemon thread, left behind
                log.warning("a result lane did not take its stop in time")
        for thread in self._threads:
            thread.join(timeout_s / len(self._threads))

    def _run(self, q: "queue.Queue[Optional[tuple]]") -> None:
        while True:
            item = q.get()
            if item is None:
                return
            camera_id, work = item
            try:
                work()
            except Exception:
                self._on_error(camera_id)
