"""Reads of the event store while its database cannot be read (edge_app.events.reader)."""
from __future__ import annotations

import logging
import sqlite3

import pytest

from edge_app.events import database as db_sql
from edge_app.events.pending import PendingWrites
from edge_app.events.query import EventQuery
from edge_app.events.reader import EventReader

READS = [
    ("events", lambda reader: reader.events(EventQuery())),
    ("get", lambda reader: reader.get("1800000000.000-cam1-1")),
    ("snapshot", lambda reader: reader.snapshot("1800000000.000-cam1-1")),
    ("line_counts", lambda reader: reader.line_counts()),
]


def warnings_of(caplog) -> list:
    return [r for r in caplog.records if r.name == "edge_app.events.reader" and r.levelno >= logging.WARNING]


@pytest.mark.parametrize("name, read", READS, ids=[name for name, _ in READS])
def test_a_database_that_cannot_be_read_is_logged_once_not_on_every_read(tmp_path, caplog, name, read):
    # What a full disk leaves: the file was created, its tables never were. The dashboard and
    # clients keep asking; a warning per request would fill the log of a box that runs for months.
    (tmp_path / db_sql.DB_NAME).write_bytes(b"")
    reader = EventReader(tmp_path, PendingWrites())
    caplog.set_level(logging.INFO, logger="edge_app.events.reader")
    for _ in range(50):
        read(reader)
    assert len(warnings_of(caplog)) == 1, [r.getMessage() for r in warnings_of(caplog)]
    assert "no such table" in warnings_of(caplog)[0].getMessage()


def test_reads_that_work_again_are_logged_and_a_new_failure_is_logged_again(tmp_path, caplog):
    path = tmp_path / db_sql.DB_NAME
    path.write_bytes(b"")
    reader = EventReader(tmp_path, PendingWrites())
    caplog.set_level(logging.INFO, logger="edge_app.events.reader")
    assert reader.events(EventQuery()) == [] and reader.events(EventQuery()) == []
    with sqlite3.connect(str(path)) as conn:  # the disk took the writer's tables after all
        conn.execute("CREATE TABLE line_counts (camera_id TEXT, line TEXT, in_count INTEGER, out_count INTEGER)")
    assert reader.line_counts() == {}
    assert any("readable again" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    path.write_bytes(b"not a database, whatever the disk did")
    assert reader.line_counts() == {} and reader.line_counts() == {}
    assert len(warnings_of(caplog)) == 2, [r.getMessage() for r in warnings_of(caplog)]


def _event(n: int, camera: str = "cam1", **changes):
    from dataclasses import replace
    from edge_app.events.model import Event
    start = 1_800_000_000.0 + n
    return replace(Event(id=f"{start:.3f}-{camera}-{n}", camera_id=camera, label="person", track_id=n, score=0.7,
                         top_score=0.8, box=(1.0, 2.0, 3.0, 4.0), frame_time=start, start_time=start), **changes)


def test_pages_and_totals_count_what_memory_holds_beside_the_disk(tmp_path):
    """While the disk lags, a page and the total are those of the merged list: events held in memory
    count, an event deleted in memory does not, and a clip held in memory counts as a clip."""
    from edge_app.events.model import ClipRecord
    disk = db_sql.EventDatabase(tmp_path)
    disk.begin()
    for n in range(1, 9):  # events 1..8 on disk; 2 and 4 with clips
        disk.upsert(_event(n, "cam2" if n == 8 else "cam1"))
    for n in (2, 4):
        disk.put_clip(ClipRecord(_event(n).id, f"{n}.mp4", 10, 1.0), 0.0)
    disk.commit()
    disk.close()
    pending = PendingWrites()
    pending.put_event(_event(10))  # held only in memory
    pending.put_event(_event(5))  # on disk too
    pending.delete(_event(7).id)
    pending.put_clip(_event(6).id, ClipRecord(_event(6).id, "6.mp4", 10, 1.0), 0.0)
    pending.put_clip(_event(4).id, None, 0.0)  # its clip was removed
    reader = EventReader(tmp_path, pending)

    def listed(**filters):
        return [e.track_id for e in reader.events(EventQuery(**filters))]

    assert listed(limit=500) == [10, 8, 6, 5, 4, 3, 2, 1]
    assert reader.total(EventQuery()) == 8
    assert listed(limit=3, offset=2) == [6, 5, 4] and listed(limit=3, offset=6) == [2, 1]
    assert listed(camera="cam1", limit=2, offset=1) == [6, 5] and reader.total(EventQuery(camera="cam1")) == 7
    assert listed(has_clip=True) == [6, 2] and reader.total(EventQuery(has_clip=True)) == 2
    assert reader.total(EventQuery(has_clip=False, offset=3, limit=1)) == 6
    pending.clear()  # everything reached the disk: the database alone answers
    assert listed(limit=3, offset=2) == [6, 5, 4] and reader.total(EventQuery(has_clip=True)) == 2


def test_events_held_in_memory_are_listed_and_counted_while_the_disk_cannot_be_read(tmp_path):
    """A full disk: the database cannot be read, the events held in memory are all there is, and a
    client still gets them, with their count (the appliance serves what it published)."""
    (tmp_path / db_sql.DB_NAME).write_bytes(b"")  # what a full disk leaves: a file without tables
    pending = PendingWrites()
    for n in (1, 2, 3):
        pending.put_event(_event(n))
    reader = EventReader(tmp_path, pending)
    assert [e.track_id for e in reader.events(EventQuery())] == [3, 2, 1]
    assert [e.track_id for e in reader.events(EventQuery(limit=1, offset=1))] == [2]
    assert reader.total(EventQuery()) == 3 and reader.total(EventQuery(camera="cam2")) == 0
