"""Reads of the event store, for HTTP threads: a short-lived connection of their own per read
(WAL lets it run beside the writer), merged with what is held in memory while the disk fails.

A database that cannot be read is logged once, and again only after reads have worked in
between: clients and the dashboard keep asking, and a warning per request would fill the log of
a box whose disk is already in trouble. The store's status says what is wrong meanwhile.

A file found corrupt is different: what it still answers cannot be trusted, and an empty list
would look like the truth. The reads a client asked for raise EventDatabaseUnusable then, and
the store is told, to move the file aside and start a new one."""
from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, List, Optional

from edge_app.events import database as db_sql
from edge_app.events.model import ClipRecord, Event
from edge_app.events.pending import PendingWrites
from edge_app.events.query import EventQuery, LineCountsByCamera, newest_first_key
from edge_app.events.recovery import EventDatabaseUnusable, is_corrupt
from edge_app.events.tracks import EventTrack, read_track

log = logging.getLogger(__name__)

#: what a disk that is full, gone or read-only raises; the store never lets these reach a caller
DISK_ERRORS = (sqlite3.Error, OSError, db_sql.NewerDatabase)


class EventReader:
    def __init__(self, directory: Path, pending: PendingWrites,
                 on_corrupt: Callable[[BaseException], None] = lambda err: None):
        self.directory = Path(directory)
        self._pending = pending
        self._on_corrupt = on_corrupt
        self._failing = False  # the latest read failed (and was logged)
        self._failing_lock = threading.Lock()

    def events(self, query: EventQuery) -> List[Event]:
        if self._pending.empty():  # the usual case: the database alone answers, its offset too
            return self._read(lambda conn: db_sql.query_events(conn, query), [], asked=True)
        # Held events may fall anywhere in the order: the page is cut from the merge of all before it.
        # The events memory changed (held, deleted, given or rid of a clip) are read from the disk by
        # id, since the disk's filter judges them by what it has, not what they are now. A disk that
        # cannot be read (full, gone) leaves what memory holds: it is merged outside the read.
        end = query.offset + query.bounded_limit
        touched = sorted(self._pending.touched_ids())
        on_disk = self._read(lambda conn: db_sql.query_events(conn, query, limit=end, offset=0)
                             + db_sql.events_by_id(conn, touched), [], asked=True)
        held = self._pending.matching(replace(query, has_clip=None))
        return [e for e in self._merge(on_disk, held) if query.matches(e)][query.offset:end]

    def total(self, query: EventQuery) -> int:
        """How many events match ``query``, as :meth:`events` would list them all."""
        touched = self._pending.touched_ids()
        on_disk, stored = self._read(lambda conn: (db_sql.count_events(conn, query),
                                                   db_sql.events_by_id(conn, sorted(touched))), (0, []), asked=True)
        if not touched:
            return on_disk
        # The events memory changed are counted as the merge shows them, not as the disk has them.
        held = [e for e in self._pending.matching(EventQuery()) if e.id in touched]
        shown = sum(1 for e in self._merge(stored, held) if query.matches(e))
        return on_disk - sum(1 for e in stored if query.matches(e)) + shown

    def get_on_disk(self, event_id: str, asked: bool = False) -> Optional[Event]:
        return self._read(lambda conn: db_sql.get_event(conn, event_id), None, asked)

    def get(self, event_id: str) -> Optional[Event]:
        if self._pending.is_deleted(event_id):
            return None
        on_disk = self.get_on_disk(event_id, asked=True)
        held = self._pending.get(event_id)
        if held is None:
            return None if on_disk is None else self._pending.with_clip(on_disk)
        return self._held_over(held, on_disk)

    def clip(self, event_id: str) -> Optional[ClipRecord]:
        """What the event record keeps of its clip, None without one."""
        if self._pending.is_deleted(event_id):
            return None
        held, clip = self._pending.clip(event_id)
        if held:
            return clip
        return self._read(lambda conn: db_sql.clip_record(conn, event_id), None, asked=True)

    def track(self, event_id: str) -> Optional[EventTrack]:
        """The event's boxes over time, as the disk has them (never held in memory)."""
        return self._read(lambda conn: read_track(conn, event_id), None, asked=True)

    def snapshot(self, event_id: str) -> Optional[bytes]:
        if self._pending.is_deleted(event_id):
            return None
        held = self._pending.snapshot(event_id)
        if held is not None:
            return held
        path = self._read(lambda conn: db_sql.snapshot_path(conn, self.directory, event_id), None, asked=True)
        if path is None:
            return None
        try:
            return path.read_bytes()
        except OSError as err:
            log.warning("cannot read the snapshot of event %s: %s", event_id, err)
            return None

    def line_counts(self) -> LineCountsByCamera:
        counts: LineCountsByCamera = self._read(db_sql.line_counts, {})
        for camera, lines in self._pending.line_counts().items():
            counts.setdefault(camera, {}).update(lines)
        return counts

    def _read(self, fn: Callable[[sqlite3.Connection], Any], default: Any, asked: bool = False) -> Any:
        """``fn``'s answer, or ``default`` when the disk fails; ``asked``: a client's read, which
        raises EventDatabaseUnusable rather than answer ``default`` for a corrupt file."""
        try:
            conn = db_sql.read_connection(self.directory)
        except DISK_ERRORS as err:
            return self._unreadable(err, default, asked)
        if conn is None:
            return default
        try:
            result = fn(conn)
        except DISK_ERRORS as err:
            return self._unreadable(err, default, asked)
        finally:
            conn.close()
        self._worked()
        return result

    def _unreadable(self, err: BaseException, default: Any, asked: bool) -> Any:
        self._failed(err)
        if is_corrupt(err):
            self._on_corrupt(err)
            if asked:
                raise EventDatabaseUnusable(
                    f"the event database is corrupt ({err}); the appliance moves it aside and starts a new one, "
                    "or says why it cannot in GET /api/v1/status (events.database)") from err
        return default

    def _failed(self, err: BaseException) -> None:
        with self._failing_lock:
            first, self._failing = not self._failing, True
        if first:
            log.warning("cannot read the event database in %s: %s; answering from memory (logged again only "
                        "after reads have worked)", self.directory, err)
        else:
            log.debug("cannot read the event database in %s: %s", self.directory, err)

    def _worked(self) -> None:
        with self._failing_lock:
            recovered, self._failing = self._failing, False
        if recovered:
            log.info("the event database in %s is readable again", self.directory)

    def _merge(self, on_disk: List[Event], held: List[Event]) -> List[Event]:
        deleted = self._pending.deleted_ids()
        merged = {e.id: self._pending.with_clip(e) for e in on_disk if e.id not in deleted}
        for event in held:
            merged[event.id] = self._held_over(event, merged.get(event.id))
        return sorted(merged.values(), key=newest_first_key)

    def _held_over(self, held: Event, on_disk: Optional[Event]) -> Event:
        """An event held in memory, with what the disk knows of its snapshot and clip."""
        event = replace(held, has_snapshot=held.has_snapshot or bool(on_disk and on_disk.has_snapshot))
        if on_disk is not None and on_disk.has_clip:
            event = replace(event, has_clip=True, clip_duration_s=on_disk.clip_duration_s)
        return self._pending.with_clip(event)
