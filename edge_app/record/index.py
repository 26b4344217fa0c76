"""The recordings' index: one SQLite table of files (segments and clip parts) in the recording folder.

The files are the truth and the index a cache of them: at start ``RecordingStore`` reconciles
the two (a file the index lacks or describes with another size is read again; a row without
its file goes), so after ``kill -9`` the index says what is on disk.
"""
from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional

INDEX_NAME = "index.sqlite3"
#: pages (4 kB) of write-ahead log between checkpoints, and what the log is cut back to after one
WAL_CHECKPOINT_PAGES = 100
WAL_LIMIT_BYTES = 256 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,          -- relative to the recording folder
    kind TEXT NOT NULL,             -- 'segment' or 'clip'
    camera_id TEXT NOT NULL,
    event_id TEXT,                  -- clips only
    part INTEGER NOT NULL DEFAULT 0,
    start REAL NOT NULL,
    end REAL NOT NULL,
    bytes INTEGER NOT NULL,
    complete INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_time ON files (kind, camera_id, start);
CREATE INDEX IF NOT EXISTS files_event ON files (event_id, part);
"""


@dataclass(frozen=True)
class FileRow:
    path: str
    kind: str  # "segment" or "clip"
    camera_id: str
    event_id: Optional[str]
    part: int
    start: float
    end: float
    bytes: int
    complete: bool


_COLUMNS = "path, kind, camera_id, event_id, part, start, end, bytes, complete"


def _row(values) -> FileRow:
    path, kind, camera_id, event_id, part, start, end, size, complete = values
    return FileRow(path, kind, camera_id, event_id, int(part), float(start), float(end), int(size), bool(complete))


class RecordingIndex:
    """Thread-safe access to the index (the recorders of every camera and the API share it)."""

    def __init__(self, folder: Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(Path(folder) / INDEX_NAME), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # the index shares the recordings' disk, which runs full by design: its log is checkpointed
        # every ~400 kB and cut back to WAL_LIMIT_BYTES, instead of staying at its largest (4 MB+)
        self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def upsert(self, row: FileRow) -> None:
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO files ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.path, row.kind, row.camera_id, row.event_id, row.part, row.start, row.end, row.bytes,
                 int(row.complete)))

    def remove(self, paths: Iterable[str]) -> None:
        with self._lock:
            self._db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in paths])

    def all(self) -> List[FileRow]:
        return self._query(f"SELECT {_COLUMNS} FROM files ORDER BY start, path")

    def get(self, path: str) -> Optional[FileRow]:
        rows = self._query(f"SELECT {_COLUMNS} FROM files WHERE path = ?", (path,))
        return rows[0] if rows else None

    def clips(self, event_id: str) -> List[FileRow]:
        return self._query(f"SELECT {_COLUMNS} FROM files WHERE kind = 'clip' AND event_id = ? ORDER BY part",
                           (event_id,))

    def segments(self, camera_id: Optional[str], start: float, end: float) -> List[FileRow]:
        sql = f"SELECT {_COLUMNS} FROM files WHERE kind = 'segment' AND end >= ? AND start <= ?"
        args: tuple = (start, end)
        if camera_id is not None:
            sql += " AND camera_id = ?"
            args += (camera_id,)
        return self._query(sql + " ORDER BY start, path", args)

    def _query(self, sql: str, args: tuple = ()) -> List[FileRow]:
        with self._lock:
            return [_row(values) for values in self._db.execute(sql, args).fetchall()]
