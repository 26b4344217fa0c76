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

The child's loop and its messages are in ``edge_app.track.tracker_child``, one child seen from the
appliance in ``edge_app.track.tracker_host``, a camera's tracker there in
``edge_app.track.remote_tracker``.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, List, Optional

from edge_app.track.remote_tracker import RemoteTracker
from edge_app.track.tracker import TrackerSettings
from edge_app.track.tracker_host import ANSWER_TIMEOUT_S, START_TIMEOUT_S, TrackerHost


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
