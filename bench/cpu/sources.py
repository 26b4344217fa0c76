"""In-memory cameras for the pipeline on pre-decoded frames, and a publish callback that counts.

``PreDecodedSource`` implements the pipeline's CameraFeed protocol like a live camera whose
newest frame is always fresh: every ``take()`` returns a new Frame stamped now, so the pipeline
pays no decoding and the capture-to-publish latency starts at the moment it took the frame.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, Dict, List, Sequence

import numpy as np

from edge_app.capture import Frame


class PreDecodedSource:
    def __init__(self, camera_id: str, images: Sequence[np.ndarray], offset: int = 0) -> None:
        self.camera_id = camera_id
        self._images = list(images)
        self._next_index = offset
        self._frame_id = 0

    @property
    def waits_for_consumer(self) -> bool:
        return False  # a live camera: the pipeline may always take the newest frame

    def take(self) -> Frame:
        image = self._images[self._next_index % len(self._images)]
        self._next_index += 1
        self._frame_id += 1
        return Frame(self.camera_id, self._frame_id, time.time(), time.monotonic(), image)


class CountingPublisher:
    """Stands in for MQTT: counts messages per camera and keeps latencies once ``recording``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Dict[str, int] = defaultdict(int)
        self._latencies_ms: List[float] = []
        self.recording = False

    def publish(self, camera_id: str, payload: Dict[str, Any]) -> None:
        with self._lock:
            self._counts[camera_id] += 1
            if self.recording:
                self._latencies_ms.append(float(payload.get("latency_ms", 0.0)))

    def counts(self) -> Dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def latencies_ms(self) -> List[float]:
        with self._lock:
            return list(self._latencies_ms)
