"""Rolling pipeline figures: frames per second and capture-to-publish latency percentiles."""
from __future__ import annotations

import threading
from collections import deque
from typing import Deque, Dict, Optional

import numpy as np


class RollingRate:
    """Events per second over the last ``window_s`` seconds (monotonic time passed in)."""

    def __init__(self, window_s: float = 5.0):
        self.window_s = window_s
        self._stamps: Deque[float] = deque()
        self._lock = threading.Lock()

    def add(self, now_s: float, count: int = 1) -> None:
        with self._lock:
            self._stamps.extend([now_s] * count)
            self._trim(now_s)

    def _trim(self, now_s: float) -> None:
        while self._stamps and self._stamps[0] < now_s - self.window_s:
            self._stamps.popleft()

    def rate(self, now_s: float) -> float:
        with self._lock:
            self._trim(now_s)
            if len(self._stamps) < 2:
                return 0.0
            span_s = max(now_s - self._stamps[0], 1e-6)
            return round(len(self._stamps) / max(span_s, min(self.window_s, span_s)), 2)


class LatencyWindow:
    """The last ``size`` latencies, for p50/p99 without unbounded memory."""

    def __init__(self, size: int = 1000):
        self._values_ms: Deque[float] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, latency_ms: float) -> None:
        with self._lock:
            self._values_ms.append(latency_ms)

    def percentiles(self) -> Dict[str, Optional[float]]:
        with self._lock:
            values = np.fromiter(self._values_ms, dtype=np.float64)
        if values.size == 0:
            return {"p50": None, "p99": None}
        p50, p99 = np.percentile(values, [50, 99])
        return {"p50": round(float(p50), 2), "p99": round(float(p99), 2)}
