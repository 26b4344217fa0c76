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
