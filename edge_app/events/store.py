"""The event store: events, their best snapshots and line counts in SQLite, written by one thread.

Callers on the capture, inference and publish threads hand over work on a bounded queue and
never wait for the disk (``write_queue``). The writer thread batches what it finds in the queue
into one transaction, and runs retention (by age and by total size) between batches.

A disk that is full or a folder that cannot be written never raises into a caller: the writes
are kept in memory (bounded, see ``pending``), served to readers from there, the problem shows
in :meth:`EventStore.health` and the log, and the writer tries the disk again every
``maintenance_interval_s``. Events keep flowing over MQTT meanwhile; that is not this module.
A database file found corrupt, at the start or by any read or write, is moved aside and a new one
started (``recovery``). The writer thread's side is ``store_writer``.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

from edge_app.events.counts import LineTotals
from edge_app.events.database import EventDatabase
from edge_app.events.deletions import Deletions
from edge_app.events.model import ClipRecord, Event, Snapshot
from edge_app.events.pending import PendingWrites
from edge_app.events.query import EventQuery, StoreHealth
from edge_app.events.reader import EventReader
from edge_app.events.recovery import CorruptionWatch
from edge_app.events.tracks import EventTrack
from edge_app.events.store_writer import StoreWriter
from edge_app.events.write_queue import QUEUE_SIZE, Reply, WriteQueue

log = logging.getLogger(__name__)

MAINTENANCE_INTERVAL_S = 30.0
DELETE_WAIT_S = 5.0


class EventStore(StoreWriter):
    """Events on disk in ``directory`` (``events.db`` and ``snapshots/``). Thread-safe."""

    def __init__(self, directory: Path, retain_days: float = 7.0, max_mb: float = 1024.0, *,
                 queue_size: int = QUEUE_SIZE, maintenance_interval_s: float = MAINTENANCE_INTERVAL_S,
                 clock: Callable[[], float] = time.time):
        self.directory = Path(directory)
        self.retain_days = float(retain_days)
        self.max_bytes = int(float(max_mb) * 1024 * 1024)
        self._maintenance_interval_s = maintenance_interval_s
        self._clock = clock
        self._queue = WriteQueue(self.directory, queue_size)
        self._pending = PendingWrites()
        self._corruption = CorruptionWatch(self.directory, clock)
        self._reader = EventReader(self.directory, self._pending, on_corrupt=self._corrupt_file_read)
        self._lock = threading.Lock()
        self._problem: Optional[str] = None
        self._deletions = Deletions()  # writer thread only
        self._db: Optional[EventDatabase] = self._open_database()
        self._thread = threading.Thread(target=self._run, name="events:writer", daemon=True)
        self._thread.start()

    # -- writes: never block, never raise ----------------------------------------------------------
    def save_event(self, event: Event) -> bool:
        """Insert or update ``event`` (its latest state). False if it was dropped (queue full)."""
        return self._queue.offer("event", event)

    def save_snapshot(self, snapshot: Snapshot) -> bool:
        """Keep ``snapshot.jpeg`` as the best picture of its event, replacing an older one."""
        return self._queue.offer("snapshot", snapshot)

    def save_track(self, track: EventTrack) -> bool:
        """The boxes of an ended event over time (written once, with the event's end)."""
        return self._queue.offer("track", track)

    def save_line_counts(self, camera_id: str, totals: Mapping[str, LineTotals]) -> bool:
        """The crossing totals of ``camera_id``'s lines; lines not named keep their counts."""
        return self._queue.offer("lines", {camera_id: {line: {"in": int(t.count_in), "out": int(t.count_out)}
                                                 for line, t in totals.items()}})

    def save_clip(self, event_id: str, path: str, size_bytes: int, duration_s: float,
                  start_time: Optional[float] = None, end_time: Optional[float] = None) -> bool:
        """The event's clip as the recording store reports it (``path`` relative to its directory)."""
        return self._queue.offer("clip", ClipRecord(event_id, str(path), int(size_bytes), float(duration_s),
                                                    start_time, end_time))

    def forget_clip(self, event_id: str) -> bool:
        """The recording store removed the event's clip (its own retention): the event keeps no claim to one."""
        return self._queue.offer("clip", ClipRecord(event_id, "", -1, 0.0))

    def on_deleted(self, callback: Callable[[List[str]], None]) -> None:
        """``callback(event_ids)`` after events were deleted (through the API or by retention), on
        the writer thread: whoever keeps their clips removes them. Must not block."""
        self._deletions.listener = callback

    def set_retention(self, retain_days: float, max_mb: float) -> None:
        """New limits (a configuration change); the writer applies them at its next retention run."""
        self.retain_days, self.max_bytes = float(retain_days), int(float(max_mb) * 1024 * 1024)

    def delete(self, event_id: str) -> bool:
        """Delete an event and its snapshot (waits for the writer); False when it was unknown."""
        reply = self._ask("delete", event_id, DELETE_WAIT_S)
        if reply is None:
            log.warning("event store %s: event %s not deleted: the writer is closed or its queue stays full",
                        self.directory, event_id)
            return False
        if not reply.done.is_set():  # queued behind a slow disk: it is deleted when the writer gets there
            return self.get(event_id) is not None
        return bool(reply.result)

    def mark_reviewed(self, item_ids: List[str], reviewed: bool = True) -> Optional[int]:
        """Mark review items (by id) reviewed, or unreviewed; waits for the writer. The count of
        marks changed, or None when the disk did not take it (the store's health says why)."""
        reply = self._ask("reviewed", (tuple(item_ids), bool(reviewed)), DELETE_WAIT_S)
        if reply is None or not reply.done.is_set():
            return None
        return reply.result

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until everything queued before this call is written (or held); False on timeout."""
        reply = self._ask("flush", None, timeout_s)
        return reply is not None and reply.done.is_set()

    def _ask(self, kind: str, payload: Any, timeout_s: float) -> Optional[Reply]:
        if self._queue.closing or not self._thread.is_alive():
            return None
        return self._queue.ask(kind, payload, timeout_s)

    def close(self, end_time: Optional[float] = None, timeout_s: float = 5.0) -> None:
        """End every open event at ``end_time`` (default now), write everything queued, close."""
        if self._queue.closing:
            return
        end = self._clock() if end_time is None else float(end_time)
        try:
            self._queue.put(("close", end, Reply(threading.Event())), timeout_s)
        except queue.Full:
            log.error("event store %s: the writer did not take the shutdown in %.0f s", self.directory, timeout_s)
        self._queue.closing = True
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.error("event store %s: the writer did not finish within %.0f s", self.directory, timeout_s)

    # -- reads: their own connections, beside the writer ---------------------------------------------
    def events(self, query: EventQuery = EventQuery()) -> List[Event]:
        """Events matching ``query``, newest (by start time) first, at most ``query.limit``."""
        return self._reader.events(query)

    def total(self, query: EventQuery = EventQuery()) -> int:
        """How many events match ``query``, whatever its limit and offset."""
        return self._reader.total(query)

    def get(self, event_id: str) -> Optional[Event]:
        return self._reader.get(event_id)

    def snapshot(self, event_id: str) -> Optional[bytes]:
        """The JPEG of the event's best snapshot, or None."""
        return self._reader.snapshot(event_id)

    def clip(self, event_id: str) -> Optional[ClipRecord]:
        """What the event record keeps of its clip (path and size), None without one."""
        return self._reader.clip(event_id)

    def track(self, event_id: str) -> Optional[EventTrack]:
        """The event's boxes over time, None when none were kept."""
        return self._reader.track(event_id)

    def load_line_counts(self) -> Dict[str, Dict[str, LineTotals]]:
        """``{camera: {line: LineTotals}}`` as last saved (kept across restarts)."""
        return {camera: {line: LineTotals(c["in"], c["out"]) for line, c in lines.items()}
                for camera, lines in self._reader.line_counts().items()}

    def health(self) -> StoreHealth:
        dropped = self._queue.dropped
        with self._lock:
            problem = self._problem
        return StoreHealth(directory=str(self.directory), on_disk=problem is None, problem=problem,
                           queued=self._queue.qsize(), dropped=dropped, held_in_memory=len(self._pending),
                           database=self._corruption.report())

    @property
    def problem(self) -> Optional[str]:
        return self.health().problem
