"""Events per second over a sliding window, with the time passed in."""
from __future__ import annotations

import collections
import threading
from typing import Deque


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
