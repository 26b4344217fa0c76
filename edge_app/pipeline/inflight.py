"""How many batches are between preprocessing and the end of decoding, bounded by the detector.

A backend reuses its input and output buffers after ``Detector.max_batches_in_flight`` further
batches; the pipeline takes a place here before preprocessing and gives it back once the batch
is decoded or dropped, so no batch ever reads a buffer that a newer one overwrites.
"""
from __future__ import annotations

import threading


class InFlight:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def acquire(self, limit: int, stop: threading.Event, poll_s: float = 0.1) -> bool:
        """Wait for a place under ``limit``; False when ``stop`` is set first."""
        with self._changed:
            while self._count >= max(1, limit):
                if stop.is_set():
                    return False
                self._changed.wait(poll_s)
            self._count += 1
            return True

    def release(self) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()
