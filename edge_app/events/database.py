"""The event database on disk: schema, migrations and the SQL of every operation.

One ``EventDatabase`` belongs to the store's writer thread; readers (HTTP threads) open their
own short-lived connections with :func:`read_connection`, which WAL lets run beside the writer.
Snapshot JPEGs live as files next to the database (``snapshots/<name>.jpg``); the database
holds their names, so a file path is never built from what a client sent.
"""
from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from edge_app.events.model import ClipRecord, Event, Occupancy
from edge_app.events.query import EventQuery, LineCountsByCamera, snapshot_file_name
from edge_app.events.query_sql import EventColumns, SqlFilter, event_filter
from edge_app.events.tracks import CREATE_TABLE as TRACKS_TABLE

log = logging.getLogger(__name__)

DB_NAME = "events.db"
SNAPSHOT_DIR = "snapshots"
BUSY_TIMEOUT_S = 5.0
WAL_LIMIT_BYTES = 4 * 1024 * 1024
RETENTION_CHUNK = 200
ROW_BYTES_ESTIMATE = 512  # an event row with its zones and indexes, roughly

#: (version, statements): each migration runs once, in order, in one transaction
MIGRATIONS: Sequence[Tuple[int, Sequence[str]]] = (
    (1, (
        """CREATE TABLE events (
            id TEXT PRIMARY KEY, camera_id TEXT NOT NULL, label TEXT NOT NULL, track_id INTEGER NOT NULL,
            score REAL NOT NULL, top_score REAL NOT NULL, box TEXT NOT NULL, frame_time REAL NOT NULL,
            start_time REAL NOT NULL, end_time REAL, current_zones TEXT NOT NULL, entered_zones TEXT NOT NULL)""",
        "CREATE INDEX events_start ON events (start_time)",
        "CREATE INDEX events_camera_start ON events (camera_id, start_time)",
        "CREATE INDEX events_label_start ON events (label, start_time)",
        "CREATE INDEX events_open ON events (end_time) WHERE end_time IS NULL",
        "CREATE TABLE event_zones (event_id TEXT NOT NULL, zone TEXT NOT NULL, PRIMARY KEY (zone, event_id))",
        "CREATE INDEX event_zones_event ON event_zones (event_id)",
        """CREATE TABLE snapshots (event_id TEXT PRIMARY KEY, file TEXT NOT NULL, size_bytes INTEGER NOT NULL,
            saved_at REAL NOT NULL)""",
        """CREATE TABLE line_counts (camera_id TEXT NOT NULL, line TEXT NOT NULL, in_count INTEGER NOT NULL,
            out_count INTEGER NOT NULL, PRIMARY KEY (camera_id, line))""",
    )),
    # The clip of an event (record.events): its own table, like snapshots, so a database from
    # before clips keeps every row and an event's upsert never touches its clip.
    (2, (
        """CREATE TABLE clips (event_id TEXT PRIMARY KEY, path TEXT NOT NULL, size_bytes INTEGER NOT NULL,
            duration_s REAL NOT NULL, start_time REAL, end_time REAL, saved_at REAL NOT NULL)""",
    )),
    # The model that found the object (models); older rows were all the single model's.
    (3, ("ALTER TABLE events ADD COLUMN model TEXT NOT NULL DEFAULT 'default'",)),
    # Review items marked reviewed (docs/review.md): an item is derived from the events at query
    # time, so only its id (the id of its first event) is kept; the index lets the grouping of
    # one camera's events read them in order without a sort.
    (4, (
        "CREATE TABLE reviewed (item_id TEXT PRIMARY KEY, reviewed_at REAL NOT NULL)",
        "CREATE INDEX events_camera_start_id ON events (camera_id, start_time, id)",
    )),
    # The boxes of an event over time (edge_app/events/tracks.py), for the page's clip overlay.
    (5, (TRACKS_TABLE,)),
    # Loitering events and each event's seconds per zone (docs/analytics.md, "Dwell and loitering").
    (6, ("ALTER TABLE events ADD COLUMN type TEXT NOT NULL DEFAULT 'object'",
         "ALTER TABLE events ADD COLUMN dwell TEXT NOT NULL DEFAULT '{}'")),
    # The speed measured on a line pair (docs/analytics.md, "Speed"); older rows have none.
    (7, (
        "ALTER TABLE events ADD COLUMN speed_kmh REAL",
        "ALTER TABLE events ADD COLUMN speed_alert INTEGER NOT NULL DEFAULT 0",
    )),
    # An occupancy event's count and limit (docs/analytics.md, "Dwell and loitering"), as JSON; NULL
    # for the other events and every older row.
    (8, ("ALTER TABLE events ADD COLUMN occupancy TEXT",)),
)
LATEST_VERSION = MIGRATIONS[-1][0]

_EVENT_COLUMNS = ("e.id, e.camera_id, e.label, e.track_id, e.score, e.top_score, e.box, e.frame_time, e.start_time, "
                  "e.end_time, e.current_zones, e.entered_zones, s.event_id IS NOT NULL, e.model, "
                  "c.event_id IS NOT NULL, COALESCE(c.duration_s, 0), e.type, e.dwell, e.speed_kmh, e.speed_alert, "
                  "e.occupancy")
_SELECT = (f"SELECT {_EVENT_COLUMNS} FROM events e LEFT JOIN snapshots s ON s.event_id = e.id "
           "LEFT JOIN clips c ON c.event_id = e.id")


class NewerDatabase(RuntimeError):
    """The database was written by a newer edge-app: it is left as it is."""


class CorruptDatabase(sqlite3.DatabaseError):
    """SQLite's own check of the file found damage that reads and writes had not run into yet."""


def check(conn: sqlite3.Connection, thorough: bool = False) -> Optional[str]:
    """The first problem SQLite's check finds in the file, None when it is sound.

    The quick check reads every page (milliseconds for a database of events: their snapshots are
    files); the thorough one also compares every index with its table. A file that is no
    database at all raises sqlite3.DatabaseError rather than answering.
    """
    row = conn.execute("PRAGMA integrity_check(1)" if thorough else "PRAGMA quick_check(1)").fetchone()
    result = " ".join(str(row[0]).split()) if row is not None else ""  # one line, for the log and the status
    return None if result == "ok" else (result or "the check answered nothing")


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    current = row[0] or 0
    if current > LATEST_VERSION:
        raise NewerDatabase(f"the event database has schema version {current}; this edge-app knows up to {LATEST_VERSION}")
    for version, statements in MIGRATIONS:
        if version <= current:
            continue
        with conn:
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        log.info("event database migrated to schema version %d", version)


def read_connection(directory: Path) -> Optional[sqlite3.Connection]:
    """A connection for one read, or None when there is no database yet."""
    path = Path(directory) / DB_NAME
    if not path.exists():
        return None
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _event_from_row(row: Sequence) -> Event:
    return Event(id=row[0], camera_id=row[1], label=row[2], track_id=int(row[3]), score=float(row[4]),
                 top_score=float(row[5]), box=tuple(json.loads(row[6])), frame_time=float(row[7]),
                 start_time=float(row[8]), end_time=None if row[9] is None else float(row[9]),
                 current_zones=tuple(json.loads(row[10])), entered_zones=tuple(json.loads(row[11])),
                 has_snapshot=bool(row[12]), model=str(row[13]), has_clip=bool(row[14]),
                 clip_duration_s=float(row[15]), type=str(row[16]),
                 dwell_s={str(zone): float(s) for zone, s in json.loads(row[17]).items()},
                 speed_kmh=None if row[18] is None else float(row[18]), speed_alert=bool(row[19]),
                 occupancy=None if row[20] is None else Occupancy.from_dict(json.loads(row[20])))


#: the appliance's events table (``e``); entered zones have a table of their own, indexed by zone
EVENT_COLUMNS = EventColumns(camera="e.camera_id", label="e.label", start_time="e.start_time",
                             entered_zone="e.id IN (SELECT event_id FROM event_zones WHERE zone = ?)")


_HAS_CLIP = "e.id IN (SELECT event_id FROM clips)"


def _event_conditions(query: EventQuery) -> SqlFilter:
    found = event_filter(query, EVENT_COLUMNS)
    if query.has_clip is None:
        return found
    return SqlFilter((*found.conditions, _HAS_CLIP if query.has_clip else "NOT " + _HAS_CLIP), found.params)


def query_events(conn: sqlite3.Connection, query: EventQuery, limit: Optional[int] = None,
                 offset: Optional[int] = None) -> List[Event]:
    """The events matching ``query``, newest first; ``limit`` and ``offset`` default to the query's."""
    found = _event_conditions(query)
    sql = _SELECT + found.where() + " ORDER BY e.start_time DESC, e.id DESC LIMIT ? OFFSET ?"
    window = (query.bounded_limit if limit is None else limit, query.offset if offset is None else offset)
    return [_event_from_row(row) for row in conn.execute(sql, (*found.params, *window))]


def count_events(conn: sqlite3.Connection, query: EventQuery) -> int:
    """How many events match ``query``, whatever its limit and offset."""
    found = _event_conditions(query)
    return int(conn.execute("SELECT COUNT(*) FROM events e" + found.where(), found.params).fetchone()[0])


def events_by_id(conn: sqlite3.Connection, event_ids: Sequence[str]) -> List[Event]:
    ids = list(event_ids)
    if not ids:
        return []
    return [_event_from_row(row) for row in conn.execute(_SELECT + f" WHERE e.id IN ({','.join('?' * len(ids))})", ids)]


def camera_events_between(conn: sqlite3.Connection, camera_id: str, first_start: float,
                          next_start: Optional[float]) -> List[Event]:
    """The events of one camera starting at ``first_start`` or later and before ``next_start`` (None:
    no end), oldest first."""
    rows = conn.execute(_SELECT + " WHERE e.camera_id = ? AND e.start_time >= ? AND e.start_time < ? "
                        "ORDER BY e.start_time, e.id", (camera_id, first_start, 1e308 if next_start is None else next_start))
    return [_event_from_row(row) for row in rows]


def get_event(conn: sqlite3.Connection, event_id: str) -> Optional[Event]:
    row = conn.execute(_SELECT + " WHERE e.id = ?", (event_id,)).fetchone()
    return None if row is None else _event_from_row(row)


def snapshot_path(conn: sqlite3.Connection, directory: Path, event_id: str) -> Optional[Path]:
    row = conn.execute("SELECT file FROM snapshots WHERE event_id = ?", (event_id,)).fetchone()
    return None if row is None else Path(directory) / SNAPSHOT_DIR / row[0]


def clip_record(conn: sqlite3.Connection, event_id: str) -> Optional[ClipRecord]:
    row = conn.execute("SELECT path, size_bytes, duration_s, start_time, end_time FROM clips WHERE event_id = ?",
                       (event_id,)).fetchone()
    return None if row is None else ClipRecord(event_id, str(row[0]), int(row[1]), float(row[2]), row[3], row[4])


def line_counts(conn: sqlite3.Connection) -> LineCountsByCamera:
    counts: LineCountsByCamera = {}
    for camera_id, line, in_count, out_count in conn.execute("SELECT camera_id, line, in_count, out_count FROM line_counts"):
        counts.setdefault(camera_id, {})[line] = {"in": int(in_count), "out": int(out_count)}
    return counts


class EventDatabase:
    """The writer's connection. Every method may raise sqlite3.Error or OSError (a full disk)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.snapshot_dir = self.directory / SNAPSHOT_DIR
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        self._pending_unlink: List[str] = []  # snapshot files of deleted rows, removed after the commit
        self._deleting: List[str] = []  # events deleted in the open transaction
        self._deleted_ids: List[str] = []  # and once it committed, for take_deleted
        # Opened by the thread that builds the store, then used by its writer thread alone.
        self.conn = sqlite3.connect(str(self.directory / DB_NAME), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                    check_same_thread=False)
        try:
            # Damage that the statements below would not touch shows up later, on a read that then
            # answers half the events; found now, the store moves the file aside before using it.
            problem = check(self.conn)
            if problem is not None:
                raise CorruptDatabase(f"database disk image is malformed: {problem}")
            # Set before the first table exists; lets retention give deleted pages back to the disk.
            self.conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"the event database cannot use WAL (journal mode {mode})")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            # Without a limit the WAL file keeps its largest size; retention by size must see it shrink.
            self.conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")  # WAL: a power cut loses the last writes, never the file
            _migrate(self.conn)
        except Exception:
            self.conn.close()
            raise

    def close(self) -> None:
        try:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            self.conn.close()

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")
        self._deleted_ids.extend(self._deleting)
        self._deleting = []

    def rollback(self) -> None:
        self._pending_unlink = []
        self._deleting = []
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- writes (inside begin/commit) -----------------------------------------------------------
    def upsert(self, event: Event) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO events (id, camera_id, label, track_id, score, top_score, box, frame_time, "
            "start_time, end_time, current_zones, entered_zones, model, type, dwell, speed_kmh, speed_alert, occupancy) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.id, event.camera_id, event.label, int(event.track_id), float(event.score), float(event.top_score),
             json.dumps([float(v) for v in event.box]), float(event.frame_time), float(event.start_time),
             event.end_time, json.dumps(list(event.current_zones)), json.dumps(list(event.entered_zones)),
             event.model, event.type, json.dumps({zone: round(float(s), 3) for zone, s in event.dwell_s.items()}),
             event.speed_kmh, int(event.speed_alert),
             None if event.occupancy is None else json.dumps(event.occupancy.to_dict())))
        self.conn.execute("DELETE FROM event_zones WHERE event_id = ?", (event.id,))
        self.conn.executemany("INSERT OR IGNORE INTO event_zones (event_id, zone) VALUES (?, ?)",
                              [(event.id, zone) for zone in event.entered_zones])

    def put_snapshot(self, event_id: str, jpeg: bytes, saved_at: float) -> None:
        name = snapshot_file_name(event_id)
        target = self.snapshot_dir / name
        partial = self.snapshot_dir / (name + ".part")
        try:
            with open(partial, "wb") as fh:
                fh.write(jpeg)
            os.replace(partial, target)
        except OSError:
            partial.unlink(missing_ok=True)
            raise
        self.conn.execute("INSERT OR REPLACE INTO snapshots (event_id, file, size_bytes, saved_at) VALUES (?, ?, ?, ?)",
                          (event_id, name, len(jpeg), saved_at))

    def put_clip(self, clip: ClipRecord, saved_at: float) -> None:
        self.conn.execute("INSERT OR REPLACE INTO clips (event_id, path, size_bytes, duration_s, start_time, end_time, "
                          "saved_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (clip.event_id, clip.path, int(clip.size_bytes), float(clip.duration_s), clip.start_time,
                           clip.end_time, saved_at))

    def forget_clip(self, event_id: str) -> None:
        self.conn.execute("DELETE FROM clips WHERE event_id = ?", (event_id,))

    def delete(self, event_ids: Iterable[str]) -> int:
        """Delete events, their snapshots and clip records; the files go after the rows (a crash
        leaves a file, never a dangling row). The ids of deleted events wait in ``deleted_ids``
        for :meth:`take_deleted` (their clips are the recording store's to remove)."""
        ids = list(event_ids)
        files = []
        for event_id in ids:
            row = self.conn.execute("SELECT file FROM snapshots WHERE event_id = ?", (event_id,)).fetchone()
            if row is not None:
                files.append(row[0])
        deleted = 0
        for event_id in ids:
            found = self.conn.execute("DELETE FROM events WHERE id = ?", (event_id,)).rowcount
            self.conn.execute("DELETE FROM event_zones WHERE event_id = ?", (event_id,))
            self.conn.execute("DELETE FROM snapshots WHERE event_id = ?", (event_id,))
            self.conn.execute("DELETE FROM tracks WHERE event_id = ?", (event_id,))
            clip = self.conn.execute("DELETE FROM clips WHERE event_id = ?", (event_id,)).rowcount
            if found or clip:
                self._deleting.append(event_id)
            deleted += found
        self._pending_unlink.extend(files)
        return deleted

    def take_deleted(self) -> List[str]:
        """Ids deleted by committed transactions since the last call."""
        ids, self._deleted_ids = self._deleted_ids, []
        return ids

    def unlink_deleted_files(self) -> None:
        """Remove the snapshot files of deleted events; called after the deleting transaction committed."""
        files, self._pending_unlink = self._pending_unlink, []
        for name in files:
            try:
                (self.snapshot_dir / name).unlink(missing_ok=True)
            except OSError as err:
                log.warning("cannot remove snapshot %s: %s", name, err)

    def mark_reviewed(self, item_ids: Iterable[str], reviewed: bool, at: float) -> int:
        """Mark review items (by id) reviewed, or not reviewed again; the count of rows changed."""
        ids = list(dict.fromkeys(item_ids))
        if reviewed:
            return sum(self.conn.execute("INSERT OR IGNORE INTO reviewed (item_id, reviewed_at) VALUES (?, ?)",
                                         (item_id, at)).rowcount for item_id in ids)
        return sum(self.conn.execute("DELETE FROM reviewed WHERE item_id = ?", (item_id,)).rowcount for item_id in ids)

    def forget_reviewed_of_deleted(self) -> int:
        """Marks whose item's first event is gone (retention, a delete) go with it."""
        return self.conn.execute("DELETE FROM reviewed WHERE item_id NOT IN (SELECT id FROM events)").rowcount

    def end_open(self, end_time: Optional[float]) -> int:
        """End every open event (at ``end_time``, or at its last frame when ``end_time`` is None)."""
        if end_time is None:
            return self.conn.execute("UPDATE events SET end_time = frame_time WHERE end_time IS NULL").rowcount
        return self.conn.execute("UPDATE events SET end_time = MAX(?, start_time) WHERE end_time IS NULL",
                                 (end_time,)).rowcount

    def save_line_counts(self, counts: LineCountsByCamera) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO line_counts (camera_id, line, in_count, out_count) VALUES (?, ?, ?, ?)",
            [(camera, line, int(c.get("in", 0)), int(c.get("out", 0)))
             for camera, lines in counts.items() for line, c in lines.items()])

    # -- retention ------------------------------------------------------------------------------
    def retain(self, cutoff: float, max_bytes: int) -> int:
        """Delete events ended before ``cutoff``, then the oldest while the total exceeds ``max_bytes``.

        Commits in chunks, so a large clean-up never holds the write lock for long; returns the count.
        """
        deleted = 0
        stale = self.ended_before(cutoff) + self.orphan_snapshots_before(cutoff)
        for start in range(0, len(stale), RETENTION_CHUNK):
            deleted += self._delete_committed(stale[start:start + RETENTION_CHUNK])
        excess = self.size_bytes() - max_bytes
        while excess > 0:
            chosen, freed = [], 0
            for event_id, snapshot_bytes in self.oldest(RETENTION_CHUNK):
                if freed >= excess:
                    break
                chosen.append(event_id)
                freed += snapshot_bytes + ROW_BYTES_ESTIMATE
            if not chosen:
                break
            deleted += self._delete_committed(chosen)
            self.give_back_space()
            excess = self.size_bytes() - max_bytes
        if deleted:
            self.begin()
            self.forget_reviewed_of_deleted()
            self.commit()
            self.give_back_space()
        return deleted

    def _delete_committed(self, event_ids: List[str]) -> int:
        self.begin()
        count = self.delete(event_ids)
        self.commit()
        self.unlink_deleted_files()
        return count

    def ended_before(self, cutoff: float) -> List[str]:
        return [row[0] for row in self.conn.execute("SELECT id FROM events WHERE end_time IS NOT NULL AND end_time < ?",
                                                     (cutoff,))]

    def orphan_snapshots_before(self, cutoff: float) -> List[str]:
        return [row[0] for row in self.conn.execute(
            "SELECT event_id FROM snapshots WHERE saved_at < ? AND event_id NOT IN (SELECT id FROM events) "
            "UNION SELECT event_id FROM clips WHERE saved_at < ? AND event_id NOT IN (SELECT id FROM events)",
            (cutoff, cutoff))]

    def size_bytes(self) -> int:
        """Live pages of the database plus every snapshot: what retention by size counts."""
        page_size = self.conn.execute("PRAGMA page_size").fetchone()[0]
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0] - self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        snapshots = self.conn.execute("SELECT COALESCE(SUM(size_bytes), 0) FROM snapshots").fetchone()[0]
        return int(page_size * pages + snapshots)

    def oldest(self, count: int) -> List[Tuple[str, int]]:
        """(id, snapshot bytes) of the oldest events, ended ones first (an open one is written again
        at its next update)."""
        return [(row[0], int(row[1])) for row in self.conn.execute(
            "SELECT e.id, COALESCE(s.size_bytes, 0) FROM events e LEFT JOIN snapshots s ON s.event_id = e.id "
            "ORDER BY e.end_time IS NULL, e.start_time, e.id LIMIT ?", (count,))]

    def give_back_space(self) -> None:
        self.conn.execute("PRAGMA incremental_vacuum")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
