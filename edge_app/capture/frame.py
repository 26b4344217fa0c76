"""What a camera delivers: one ``Frame``, and a meter for how many arrive per second."""
from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from typing import Deque

import numpy as np


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded frame of one camera.

    ``frame_id`` counts the frames the camera delivered, from 1 upwards per run (SPEC.md), so a
    gap tells a subscriber how many frames were skipped. ``ts`` is the capture time in Unix
    seconds (what MQTT publishes); ``mono_ts`` is ``time.monotonic()`` at capture, for latency
    and pacing, immune to clock steps.
    """

    camera_id: str
    frame_id: int
    ts: float
    mono_ts: float
    image: np.ndarray = field(repr=False)  # BGR uint8, H x W x 3

    @property
    def width(self) -> int:
        return int(self.image.shape[1])

    @property
    def height(self) -> int:
        return int(self.image.shape[0])


class RateMeter:
    """Events per second over a sliding window of monotonic timestamps; thread-safe."""

    def __init__(self, window_s: float = 5.0, max_events: int = 512) -> None:
        self._window_s = window_s
        self._events: Deque[float] = collections.deque(maxlen=max_events)
        self._lock = threading.Lock()

    def tick(self, mono_s: float) -> None:
        with self._lock:
            self._events.append(mono_s)

    def rate(self, now_mono_s: float) -> float:
        """Events per second in the window ending now; 0 when fewer than two events are in it."""
        with self._lock:
            while self._events and now_mono_s - self._events[0] > self._window_s:
                self._events.popleft()
            if len(self._events) < 2:
                return 0.0
            # Measured up to "now", not up to the last event: a stream that stopped reads as slowing.
            span_s = max(now_mono_s, self._events[-1]) - self._events[0]
            return (len(self._events) - 1) / span_s if span_s > 0 else 0.0

    def reset(self) -> None:
        with self._lock:
            self._events.clear()
