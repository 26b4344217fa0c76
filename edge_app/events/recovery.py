"""A corrupt event database: recognised, moved aside with its snapshots, reported.

SQLite says a file is damaged with SQLITE_CORRUPT ("database disk image is malformed") or
SQLITE_NOTADB ("file is not a database"): a card that lied about a flush before a power cut, a
truncated copy, a file overwritten by something else. Nothing read from such a file can be
trusted, and reads that fail would answer an empty list that looks like the truth, so the file
goes into a folder of its own (kept for whoever wants to look or salvage, never deleted here)
and the store starts a new database. Until then, reads raise :class:`EventDatabaseUnusable`.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from edge_app.events import database as db_sql
from edge_app.events.query import DatabaseReport

log = logging.getLogger(__name__)

#: SQLITE_CORRUPT and SQLITE_NOTADB, the primary result codes of a damaged file
CORRUPT_CODES = frozenset({11, 26})
#: their messages, for Pythons before 3.11 whose errors carry no code
CORRUPT_MESSAGES = ("malformed", "not a database")
ASIDE_PREFIX = "corrupt-"
#: the database file, then what goes with it: the WAL holds its latest pages and, left beside a
#: new database of the same name, would be replayed into it
ASIDE_FILES = (db_sql.DB_NAME + "-wal", db_sql.DB_NAME + "-shm", db_sql.DB_NAME)


class EventDatabaseUnusable(RuntimeError):
    """A read found the event database corrupt: no answer until the store has started a new one."""


def is_corrupt(err: BaseException) -> bool:
    """True when ``err`` says the database file is damaged (not busy, full or unreadable)."""
    if isinstance(err, db_sql.CorruptDatabase):
        return True
    if not isinstance(err, sqlite3.DatabaseError):
        return False
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in CORRUPT_CODES
    return any(words in str(err).lower() for words in CORRUPT_MESSAGES)


def confirm(directory: Path) -> Optional[str]:
    """What SQLite's thorough check says of the file now, on a connection of its own (none of
    the writer's cached pages); None when the file is sound, absent or merely unreadable."""
    try:
        conn = db_sql.read_connection(directory)
        if conn is None:
            return None
        try:
            return db_sql.check(conn, thorough=True)
        finally:
            conn.close()
    except sqlite3.Error as err:
        return str(err) if is_corrupt(err) else None


def move_aside(directory: Path, now_s: float) -> Path:
    """Move the (closed) database, its WAL and the snapshots into ``corrupt-<UTC time>``; raises OSError."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_s))
    aside = directory / f"{ASIDE_PREFIX}{stamp}"
    number = 1
    while True:
        try:
            aside.mkdir(mode=0o700)
            break
        except FileExistsError:
            number += 1
            aside = directory / f"{ASIDE_PREFIX}{stamp}-{number}"
    for name in ASIDE_FILES + (db_sql.SNAPSHOT_DIR,):
        if os.path.lexists(directory / name):
            os.replace(directory / name, aside / name)
    return aside


class CorruptionWatch:
    """The store's knowledge of its file: a suspicion raised by any thread, what was done about it."""

    def __init__(self, directory: Path, clock: Callable[[], float]):
        self.directory = Path(directory)
        self._clock = clock
        self._lock = threading.Lock()
        self._suspicion: Optional[str] = None
        self._report = DatabaseReport()

    def report(self) -> DatabaseReport:
        with self._lock:
            return self._report

    def suspect(self, err: BaseException) -> bool:
        """Note ``err`` for the writer when it says the file is corrupt; True when it does."""
        if not is_corrupt(err):
            return False
        with self._lock:
            self._suspicion = str(err)
        return True

    def take_suspicion(self) -> Optional[str]:
        with self._lock:
            suspicion, self._suspicion = self._suspicion, None
        return suspicion

    def set_aside(self, reason: str) -> bool:
        """Move the corrupt file aside (the writer closed it); False, reported, when it cannot be."""
        now = self._clock()
        try:
            moved = move_aside(self.directory, now)
        except OSError as err:
            report = DatabaseReport("corrupt", reason, None, now)
            with self._lock:
                again = (self._report.state, self._report.reason) == ("corrupt", reason)
                self._report = report
            if not again:
                log.error("event store %s: the event database is corrupt (%s) and cannot be moved aside (%s); "
                          "events are kept in memory and the events API answers 503 until it can", self.directory,
                          reason, err)
            return False
        with self._lock:
            self._report = DatabaseReport("recovered", reason, str(moved), now)
        log.error("event store %s: the event database was corrupt (%s); it and its snapshots are moved to %s "
                  "(the events before now are there) and a new database is started", self.directory, reason, moved)
        return True
