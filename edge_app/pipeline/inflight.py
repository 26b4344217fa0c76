"""How many batches are between preprocessing and the end of decoding, bounded by the detector.

A backend reuses its input and output buffers after ``Detector.max_batches_in_flight`` further
batches; the pipeline takes a place here before preprocessing and gives it back once the batch
is decoded or dropped, so no batch ever reads a buffer that a newer one overwrites. Places are
counted per detector too, so a detector replaced by a new model can be closed once its last
batch is done (``wait_drained``) instead of after a guessed delay.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Hashable


class InFlight:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0
        self._by_owner: Counter = Counter()

    @property
    def count(self) -> int:
        return self._count

    def acquire(self, limit: int, stop: threading.Event, owner: Hashable = None, poll_s: float = 0.1) -> bool:
        """Wait for a place under ``limit``; False when ``stop`` is set first."""
        with self._changed:
            while self._count >= max(1, limit):
                if stop.is_set():
                    return False
                self._changed.wait(poll_s)
            self._count += 1
            self._by_owner[owner] += 1
            return True

    def release(self, owner: Hashable = None) -> None:
        with self._changed:
            self._count -= 1
            self._by_owner[owner] -= 1
            if self._by_owner[owner] <= 0:
                del self._by_owner[owner]
            self._changed.notify_all()

    def wait_drained(self, owner: Hashable, timeout_s: float) -> bool:
        """Wait until no batch of ``owner`` is in flight; False on timeout."""
        deadline_s = time.monotonic() + timeout_s
        with self._changed:
            while self._by_owner.get(owner, 0) > 0:
                remaining_s = deadline_s - time.monotonic()
                if remaining_s <= 0:
                    return False
                self._changed.wait(remaining_s)
            return True
