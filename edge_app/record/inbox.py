"""The hand-over from a capture thread to its recorder thread: bounded in items and in bytes.

The capture thread must never wait for a disk: what does not fit is dropped and counted (the
camera's recording status shows the count). A clip then has a hole, never a stalled camera.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Optional, Tuple

#: items waiting for the recorder thread: ~30 s of a 30 fps camera
DEFAULT_ITEMS = 1024
#: bytes of packets waiting: ~16 s of a 4 Mbit/s camera; a stalled disk costs no more memory
DEFAULT_BYTES = 8 * 1024 * 1024

Item = Tuple[Any, ...]


class Inbox:
    """A queue of ("opened", info) / ("packet", packet) / ("closed", why) / control items."""

    def __init__(self, max_items: int = DEFAULT_ITEMS, max_bytes: int = DEFAULT_BYTES) -> None:
        self._queue: "queue.Queue[Item]" = queue.Queue(maxsize=max_items)
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._bytes = 0
        self.dropped = 0

    def offer(self, item: Item, size: int = 0) -> bool:
        """Queue without waiting; False (and counted) when it does not fit."""
        with self._lock:
            if self._bytes + size > self._max_bytes:
                self.dropped += 1
                return False
            self._bytes += size
        try:
            self._queue.put_nowait(item)
            return True
        except queue.Full:
            with self._lock:
                self._bytes -= size
                self.dropped += 1
            return False

    def put(self, item: Item, timeout_s: float) -> bool:
        """Queue a control item, waiting up to ``timeout_s`` for room."""
        try:
            self._queue.put(item, timeout=timeout_s)
            return True
        except queue.Full:
            return False

    def take(self, timeout_s: float) -> Optional[Item]:
        """The next item; None after ``timeout_s`` without one. Call ``done`` when it is handled."""
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def done(self, size: int = 0) -> None:
        if size:
            with self._lock:
                self._bytes -= size
        self._queue.task_done()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every item queued so far is handled; False on timeout."""
        finished = self._queue.all_tasks_done
        with finished:
            return finished.wait_for(lambda: self._queue.unfinished_tasks == 0, timeout_s)
