"""The writer thread of the event store (``events:writer``): batches, transactions, memory while
the disk fails, corruption, retention and shutdown.

A part of :class:`edge_app.events.store.EventStore` (its base class), kept apart so each module
stays readable: the store takes the callers' writes and reads; this is what its writer thread
runs on what they queued (``edge_app.events.store`` tells the whole story).
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

from edge_app.events.database import EventDatabase
from edge_app.events.deletions import Deletions
from edge_app.events.pending import PendingBatch, PendingWrites
from edge_app.events.reader import DISK_ERRORS, EventReader
from edge_app.events.recovery import CorruptionWatch, confirm, is_corrupt
from edge_app.events.tracks import put_track
from edge_app.events.write_queue import Item, WriteQueue

log = logging.getLogger(__name__)

BATCH_MAX = 256
SECONDS_PER_DAY = 86400.0
#: writes whose caller waits for an answer: a delete (found or not), reviewed marks (rows changed)
_ANSWERED = ("delete", "reviewed")


class StoreWriter:
    """The writer thread's side of an event store (see the module's docstring)."""

    # Set by EventStore.__init__.
    directory: Path
    retain_days: float
    max_bytes: int
    _maintenance_interval_s: float
    _clock: Callable[[], float]
    _queue: WriteQueue
    _pending: PendingWrites
    _corruption: CorruptionWatch
    _reader: EventReader
    _lock: threading.Lock
    _problem: Optional[str]
    _deletions: Deletions
    _db: Optional[EventDatabase]

    @property
    def problem(self) -> Optional[str]:  # EventStore's: what health() reports
        raise NotImplementedError

    def _open_database(self) -> Optional[EventDatabase]:
        for attempt in range(2):  # a corrupt file is moved aside once, then a new one opened
            database = None
            try:
                database = EventDatabase(self.directory)
                database.begin()
                ended = database.end_open(None)  # left open by a crash: they ended when last seen
                database.commit()
                break
            except DISK_ERRORS as err:
                if database is not None:
                    database.conn.close()
                if attempt == 0 and is_corrupt(err) and self._corruption.set_aside(str(err)):
                    continue
                self._report(f"cannot open the event database in {self.directory}: {err}")
                return None
        if ended:
            log.info("event store %s: %d events left open by an unclean stop ended at their last frame",
                     self.directory, ended)
        return database

    def _report(self, problem: Optional[str]) -> None:
        with self._lock:
            before, self._problem = self._problem, problem
        if problem is not None and problem != before:
            log.error("event store: %s; events are kept in memory (and still published) until it can write again",
                      problem)
        elif problem is None and before is not None:
            log.info("event store %s: writing to disk again", self.directory)

    def _run(self) -> None:
        next_maintenance = time.monotonic() + self._maintenance_interval_s
        while True:
            item = self._queue.get(max(0.0, next_maintenance - time.monotonic()))
            batch = [] if item is None else [item]
            while item is not None and len(batch) < BATCH_MAX and batch[-1][0] not in ("close", "delete", "flush", "reviewed"):
                item = self._queue.get_nowait()
                if item is not None:
                    batch.append(item)
            try:
                if self._handle(batch):
                    return
                self._start_again_if_corrupt()
                if time.monotonic() >= next_maintenance:
                    self._maintain()
                    next_maintenance = time.monotonic() + self._maintenance_interval_s
            except Exception:  # a bug here must not end the writer: events would stop being kept
                log.exception("event store writer: unexpected error")

    def _handle(self, batch: List[Item]) -> bool:
        """Write ``batch``; True once it held the close request."""
        writes = [(kind, payload) for kind, payload, _ in batch
                  if kind in ("event", "snapshot", "lines", "delete", "clip", "reviewed", "track")]
        snapshot_bytes = sum(len(payload.jpeg) for kind, payload in writes if kind == "snapshot")
        try:
            results = self._write(writes) if writes else []
        finally:  # only now: the batch in the writer's hands counts against the budget too
            self._queue.reserve(-snapshot_bytes)
        closing = False
        for kind, payload, reply in batch:
            result: Any = True
            if kind in _ANSWERED:
                result = results.pop(0) if results else False
            elif kind == "close":
                self._finish(payload)
                closing = True
            if reply is not None:
                reply.result = result
                reply.done.set()
        return closing

    def _write(self, writes: List[Tuple[str, Any]]) -> List[bool]:
        """Apply ``writes`` in one transaction, or hold them in memory; the delete results in order."""
        writes = [(k, p) for k, p in writes if not self._deletions.drops(k, p)]
        if self._db is not None and self._pending.empty():
            try:
                self._db.begin()
                results = [self._apply(kind, payload) for kind, payload in writes]
                self._db.commit()
                self._db.unlink_deleted_files()
                self._deletions.announce(self._db.take_deleted())
                return [r for (kind, _), r in zip(writes, results) if kind in _ANSWERED]
            except DISK_ERRORS as err:
                self._rollback()
                self._corruption.suspect(err)
                self._report(f"cannot write the event database in {self.directory}: {err}")
        results = [self._hold(kind, payload) for kind, payload in writes]
        return [r for (kind, _), r in zip(writes, results) if kind in _ANSWERED]

    def _apply(self, kind: str, payload: Any) -> Any:
        assert self._db is not None
        if kind == "event":
            self._db.upsert(payload)
        elif kind == "snapshot":
            self._db.put_snapshot(payload.event_id, payload.jpeg, self._clock())
        elif kind == "lines":
            self._db.save_line_counts(payload)
        elif kind == "clip":
            if payload.size_bytes < 0:
                self._db.forget_clip(payload.event_id)
            else:
                self._db.put_clip(payload, self._clock())
        elif kind == "delete":
            return self._deletions.deleted(payload, self._db.delete([payload]) > 0)
        elif kind == "reviewed":
            item_ids, reviewed = payload
            return self._db.mark_reviewed(item_ids, reviewed, self._clock())
        elif kind == "track":
            put_track(self._db.conn, payload)
        return True

    def _hold(self, kind: str, payload: Any) -> Any:
        if kind == "event":
            self._pending.put_event(payload)
        elif kind == "snapshot":
            self._pending.put_snapshot(payload.event_id, payload.jpeg, self._clock())
        elif kind == "lines":
            self._pending.put_line_counts(payload)
        elif kind == "clip":
            self._pending.put_clip(payload.event_id, None if payload.size_bytes < 0 else payload, self._clock())
        elif kind == "delete":
            on_disk = self._reader.get_on_disk(payload) is not None
            found = self._deletions.deleted(payload, self._pending.delete(payload) or on_disk)
            if found:  # the clip goes now: the recording store has its own disk
                self._deletions.announce([payload])
            return found
        elif kind == "reviewed":
            return None  # not kept in memory: the caller says the disk refused it
        # A "track" is not held: while the disk refuses writes, an event's boxes over time are
        # the first thing to go (the event, its snapshot and its clip stay).
        return True

    def _rollback(self) -> None:
        try:
            if self._db is not None:
                self._db.rollback()
        except DISK_ERRORS as err:
            log.warning("event store %s: rollback failed: %s", self.directory, err)

    def _flush_pending(self) -> None:
        """Try the disk again with everything held in memory, in one transaction."""
        if self._db is None:
            self._db = self._open_database()
            if self._db is None:
                return
        batch: PendingBatch = self._pending.batch()
        try:
            self._db.begin()
            self._db.delete(batch.deleted)
            for event in batch.events:
                self._db.upsert(event)
            for event_id, jpeg, saved_at in batch.snapshots:
                self._db.put_snapshot(event_id, jpeg, saved_at)
            for event_id, clip, saved_at in batch.clips:
                if clip is None:
                    self._db.forget_clip(event_id)
                else:
                    self._db.put_clip(clip, saved_at)
            self._db.save_line_counts(batch.line_counts)
            self._db.commit()
            self._db.unlink_deleted_files()
            self._db.take_deleted()  # told when they were deleted in memory
        except DISK_ERRORS as err:
            self._rollback()
            self._corruption.suspect(err)
            self._report(f"cannot write the event database in {self.directory}: {err}")
            return
        self._pending.clear()
        self._report(None)

    def _corrupt_file_read(self, err: BaseException) -> None:
        """A reader found the file corrupt: the writer acts on it now, not at its next maintenance."""
        if self._corruption.suspect(err):
            self._queue.wake()

    def _start_again_if_corrupt(self) -> None:
        """Writer thread: a read or write found the file corrupt; confirmed, it is moved aside."""
        suspicion = self._corruption.take_suspicion()
        if suspicion is None:
            return
        # The reader may have seen the file that was moved aside already: the current one decides.
        found = confirm(self.directory)
        if found is None:
            log.warning("event store %s: a read found the database corrupt (%s) but it checks sound",
                        self.directory, suspicion)
            return
        if self._db is not None:
            try:
                self._db.conn.close()  # before the move: closing checkpoints into the file by name
            except DISK_ERRORS:
                pass
            self._db = None
        self._corruption.set_aside(found)  # when it cannot be moved, the report says so
        self._flush_pending()  # opens a new database and writes what is held

    def _maintain(self) -> None:
        if self._db is None or not self._pending.empty():
            self._flush_pending()
        self._retain()

    def _retain(self) -> None:
        """Delete events older than retain_days, then the oldest while the total exceeds max_mb."""
        retain_days, max_bytes = self.retain_days, self.max_bytes
        cutoff = self._clock() - retain_days * SECONDS_PER_DAY
        self._pending.drop_older_than(cutoff)
        if self._db is None:
            return
        try:
            deleted = self._db.retain(cutoff, max_bytes)
            self._deletions.announce(self._db.take_deleted())
        except DISK_ERRORS as err:
            self._rollback()
            self._deletions.announce(self._db.take_deleted())  # chunks committed before the failure
            self._corruption.suspect(err)
            log.warning("event store %s: retention failed: %s", self.directory, err)
            return
        if deleted:
            log.info("event store %s: retention deleted %d events (older than %g days or beyond %g MB)",
                     self.directory, deleted, retain_days, max_bytes / 1024 / 1024)

    def _finish(self, end_time: float) -> None:
        """At shutdown: end what is still open, write what is held if the disk takes it, close."""
        self._pending.end_open(end_time)
        if self._db is not None and self._pending.empty():
            try:
                self._db.begin()
                ended = self._db.end_open(end_time)
                self._db.commit()
                if ended:
                    log.info("event store %s: %d open events ended at shutdown", self.directory, ended)
            except DISK_ERRORS as err:
                self._rollback()
                self._report(f"cannot end the open events in {self.directory}: {err}")
        elif not self._pending.empty():
            self._flush_pending()
            if self._db is not None and self._pending.empty():
                self._finish(end_time)
                return
        if not self._pending.empty():
            log.error("event store %s: %d events held in memory could not be written before shutdown (%s)",
                      self.directory, len(self._pending), self.problem)
        if self._db is not None:
            try:
                self._db.close()
            except DISK_ERRORS as err:
                log.warning("event store %s: closing the database: %s", self.directory, err)
            self._db = None
