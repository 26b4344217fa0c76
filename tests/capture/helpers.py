"""Small helpers shared by the capture tests."""
from __future__ import annotations

import threading
import time
from typing import Callable, List, Optional, Tuple

from edge_app.capture import CameraWorker, Frame, StreamState
from edge_app.config.schema import CaptureConfig
from edge_app.config.schema_cameras import CameraConfig

# Short timings so failure paths finish in seconds; the open timeout leaves room for an RTSP
# client's stream probing (about two seconds at the clips' 10 fps).
FAST = CaptureConfig(stall_timeout_s=2.0, backoff_initial_s=0.2, backoff_max_s=1.0, open_timeout_s=5.0)


def wait_for(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.02) -> bool:
    deadline_s = time.monotonic() + timeout_s
    while time.monotonic() < deadline_s:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


class StateLog:
    """Records on_state calls; usable as the callback."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: List[Tuple[str, StreamState, Optional[str]]] = []

    def __call__(self, camera_id: str, state: StreamState, error: Optional[str]) -> None:
        with self._lock:
            self.events.append((camera_id, state, error))

    def states(self) -> List[StreamState]:
        with self._lock:
            return [state for _, state, _ in self.events]


def camera(source: str, **options) -> CameraConfig:
    return CameraConfig(id=options.pop("id", "cam1"), source=source, **options)


def drain(worker: CameraWorker, until: Callable[[], bool], timeout_s: float,
          pause_s: float = 0.0, max_frames: Optional[int] = None) -> List[Frame]:
    """Take frames until ``until()`` holds with nothing pending, ``max_frames`` or the timeout.

    ``pause_s`` after each frame makes a slow consumer.
    """
    frames: List[Frame] = []
    deadline_s = time.monotonic() + timeout_s
    while time.monotonic() < deadline_s and (max_frames is None or len(frames) < max_frames):
        done = until()  # read before take(): a frame put before "done" is then surely seen
        frame = worker.take()
        if frame is not None:
            frames.append(frame)
            if pause_s:
                time.sleep(pause_s)
        elif done:
            break
        else:
            time.sleep(0.002)
    return frames


def timed_stop(worker: CameraWorker, timeout_s: float = 5.0) -> float:
    started_s = time.monotonic()
    worker.stop(timeout_s=timeout_s)
    return time.monotonic() - started_s
