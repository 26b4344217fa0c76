"""The event writer's queue: callers hand over work and never wait for the disk.

A write goes on a bounded queue with ``put_nowait``; when the queue is full, or the snapshots
already waiting in it pass ``MAX_QUEUED_SNAPSHOT_BYTES``, the write is dropped, counted and logged
(at most every ``DROP_LOG_INTERVAL_S``). Requests that need an answer (delete, flush, close) carry
a ``Reply`` that the writer thread fills in.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple

log = logging.getLogger(__name__)

QUEUE_SIZE = 512
#: snapshots waiting in the queue, in bytes: 1080p JPEGs are large and the queue must stay small in memory
MAX_QUEUED_SNAPSHOT_BYTES = 32 * 1024 * 1024
DROP_LOG_INTERVAL_S = 10.0

Item = Tuple[str, Any, Optional["Reply"]]


@dataclass
class Reply:  # filled in by the writer thread for a caller that waits (delete, flush, close)
    done: threading.Event
    result: Any = None


class WriteQueue:
    """The queue between the callers of ``EventStore`` and its writer thread. Thread-safe."""

    def __init__(self, directory: Path, queue_size: int = QUEUE_SIZE) -> None:
        self.directory = directory
        self._queue: "queue.Queue[Item]" = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._dropped = 0
        self._queued_snapshot_bytes = 0
        self._last_drop_log = float("-inf")
        self.closing = False

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    def qsize(self) -> int:
        return self._queue.qsize()

    def offer(self, kind: str, payload: Any) -> bool:
        size = len(payload.jpeg) if kind == "snapshot" else 0
        if not self.closing and self.reserve(size):
            try:
                self._queue.put_nowait((kind, payload, None))
                return True
            except queue.Full:
                self.reserve(-size)
        with self._lock:
            self._dropped += 1
            dropped = self._dropped
            now = time.monotonic()
            due = now - self._last_drop_log >= DROP_LOG_INTERVAL_S
            if due:
                self._last_drop_log = now
        if due:
            log.warning("event store %s: %d writes dropped so far (%s)", self.directory, dropped,
                        "closed" if self.closing else "the writer is behind; the queue is full")
        return False

    def reserve(self, size: int) -> bool:
        with self._lock:
            if size > 0 and self._queued_snapshot_bytes + size > MAX_QUEUED_SNAPSHOT_BYTES:
                return False
            self._queued_snapshot_bytes += size
            return True

    def ask(self, kind: str, payload: Any, timeout_s: float) -> Optional[Reply]:
        """Queue a request that the writer answers; None when it could not even be queued."""
        reply = Reply(threading.Event())
        try:
            self._queue.put((kind, payload, reply), timeout=timeout_s)
        except queue.Full:
            return None
        reply.done.wait(timeout_s)
        return reply

    def put(self, item: Item, timeout_s: float) -> None:
        self._queue.put(item, timeout=timeout_s)

    def wake(self) -> None:
        """Have the writer look at its state now; a busy writer looks after its batch anyway."""
        try:
            self._queue.put_nowait(("wake", None, None))
        except queue.Full:
            pass

    def get(self, timeout_s: float) -> Optional[Item]:
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def get_nowait(self) -> Optional[Item]:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None
