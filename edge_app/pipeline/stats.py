"""Rolling pipeline figures: capture-to-publish latency percentiles (rates: edge_app.capture.rate)."""
from __future__ import annotations

import threading
from collections import deque
from typing import Deque, Dict, Optional

import numpy as np


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
