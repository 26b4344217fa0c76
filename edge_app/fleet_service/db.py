"""One thin database layer for SQLite (stdlib ``sqlite3``) and PostgreSQL (psycopg 3).

The fleet's SQL is written once, with ``?`` placeholders and only what both engines accept
(``INSERT ... ON CONFLICT ... DO UPDATE``, ``excluded.``, ``CASE``, TEXT/BIGINT/DOUBLE
PRECISION columns, JSON kept as text). The differences live here and nowhere else: the
placeholder style, how a transaction begins, and how a URL opens a connection.

A :class:`Connection` is used by one thread at a time; the service opens one for its writer
thread and one (behind a lock) for the API.
"""
from __future__ import annotations

import logging
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from edge_app.config.redact import mask_secrets

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 10_000
Row = Tuple[Any, ...]


class DatabaseError(Exception):
    """The database cannot be opened or used; the message names it (credentials masked)."""


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise DatabaseError("PostgreSQL needs psycopg 3: pip install 'edge-app[fleet]'") from None
    return psycopg


class Connection:
    """A connection with ``?`` placeholders on either engine."""

    def __init__(self, raw: Any, dialect: str, url: str = ""):
        self.raw = raw
        self.dialect = dialect
        self._url = url
        self._lock = threading.Lock()

    def _ensure_open(self) -> None:
        """Reconnect a PostgreSQL connection the server closed (restart, idle timeout, failover).

        The failed statement itself is not retried here: the writer retries its batch, and an API
        request answers 500 once, then works again.
        """
        if self.dialect == "postgresql" and self._url and (self.raw.closed or self.raw.broken):
            logger.warning("the PostgreSQL connection was lost; reconnecting")
            self.raw = connect(self._url).raw

    def _sql(self, sql: str) -> str:
        # psycopg uses %s; no statement of the fleet has a literal % or ? outside placeholders.
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    @contextmanager
    def transaction(self) -> Iterator["Connection"]:
        """Everything inside commits together or not at all; the lock serialises users."""
        with self._lock:
            self._ensure_open()
            if self.dialect == "sqlite":
                # IMMEDIATE takes the write lock at once, so two writers wait (busy_timeout)
                # instead of failing with "database is locked" when they upgrade.
                self.raw.execute("BEGIN IMMEDIATE")
                try:
                    yield self
                except BaseException:
                    self.raw.execute("ROLLBACK")
                    raise
                self.raw.execute("COMMIT")
            else:
                with self.raw.transaction():
                    yield self

    @contextmanager
    def reading(self) -> Iterator["Connection"]:
        """A consistent read (one snapshot) for a request, without taking SQLite's write lock."""
        with self._lock:
            self._ensure_open()
            if self.dialect == "sqlite":
                self.raw.execute("BEGIN")
                try:
                    yield self
                finally:
                    self.raw.execute("COMMIT")
            else:
                with self.raw.transaction():
                    yield self

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.raw.execute(self._sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(r) for r in rows]
        if not rows:
            return
        if self.dialect == "sqlite":
            self.raw.executemany(sql, rows)
        else:
            with self.raw.cursor() as cur:
                cur.executemany(self._sql(sql), rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> List[Row]:
        if self.dialect == "sqlite":
            return list(self.raw.execute(sql, tuple(params)).fetchall())
        with self.raw.cursor() as cur:
            cur.execute(self._sql(sql), tuple(params))
            return list(cur.fetchall()) if cur.description else []

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Optional[Row]:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def close(self) -> None:
        try:
            self.raw.close()
        except Exception:  # closing at shutdown must not raise over the real error
            logger.debug("closing the database connection failed", exc_info=True)


def dialect_of(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    raise DatabaseError(f"unsupported database URL {mask_secrets(url)!r}: use sqlite:/// or postgresql://")


def sqlite_path(url: str) -> Path:
    """``sqlite:///fleet.db`` is relative to the working directory, ``sqlite:////var/x.db`` absolute."""
    return Path(url[len("sqlite:///"):])


def connect(url: str) -> Connection:
    """Open ``url``; DatabaseError with one clear sentence when it cannot be opened."""
    dialect = dialect_of(url)
    if dialect == "sqlite":
        path = sqlite_path(url)
        try:
            if str(path) != ":memory:":
                path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: transactions are begun explicitly (Connection.transaction).
            raw = sqlite3.connect(str(path), timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                  check_same_thread=False)
            # WAL lets the API read while the writer writes; NORMAL sync is safe with WAL.
            raw.execute("PRAGMA journal_mode=WAL")
            raw.execute("PRAGMA synchronous=NORMAL")
            raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        except (sqlite3.Error, OSError) as err:
            raise DatabaseError(f"cannot open the SQLite database {path}: {err}") from None
        return Connection(raw, dialect, url)
    psycopg = _psycopg()
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as err:
        where = urlsplit(url)
        name = f"{where.hostname or 'localhost'}:{where.port or 5432}{where.path}"
        raise DatabaseError(f"cannot connect to PostgreSQL at {name}: {str(err).strip().splitlines()[0]}") from None
    return Connection(raw, dialect, url)
