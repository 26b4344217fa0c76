"""A corrupt event database (a truncated copy, a card that lied about fsync, a file overwritten
with something else) is noticed, moved aside with its snapshots, and a new one started; reads
meanwhile say so instead of answering an empty list that looks like the truth."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from edge_app.events.database import DB_NAME, SNAPSHOT_DIR
from edge_app.events.query import EventQuery, snapshot_file_name
EventDatabaseUnusable = Exception
from edge_app.events.store import EventStore
from tests.events.disks import tiny_filesystem
from testkit.skips import missing
from tests.events.test_store import JPEG, NOW, event, snapshot

#: what a file may look like after the disk failed; each is refused by SQLite in its own way
DAMAGES = {
    "truncated": lambda data: data[:len(data) // 2],  # "database disk image is malformed"
    "random bytes": lambda data: os.urandom(len(data)),  # "file is not a database"
    # an intact header and schema, garbage in the pages of the tables: only a check finds it
    "garbage pages": lambda data: data[:len(data) // 2] + os.urandom(8192) + data[len(data) // 2 + 8192:],
}


def filled_store(directory: Path, count: int = 400) -> list:
    store = EventStore(directory, clock=lambda: NOW)
    events = [event(n, start=NOW + n, entered_zones=("driveway",)) for n in range(count)]
    for ev in events:
        store.save_event(ev)
    store.save_snapshot(snapshot(events[0]))
    assert store.flush(timeout_s=15)
    store.close(end_time=NOW + count + 10)
    return events


def wait_for(condition, timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_corrupt_database_is_moved_aside_at_start_and_a_new_one_started(tmp_path, damage):
    directory = tmp_path / "events"
    events = filled_store(directory)
    damaged = DAMAGES[damage]((directory / DB_NAME).read_bytes())
    (directory / DB_NAME).write_bytes(damaged)

    store = EventStore(directory, clock=lambda: NOW + 1000)
    try:
        report = store.health().database
        assert report.state == "recovered", report
        assert "malformed" in report.reason or "not a database" in report.reason, report
        assert report.detected_ts == NOW + 1000
        moved = Path(report.moved_to)
        assert moved.parent == directory and moved.name == "corrupt-20270115T081640Z", moved
        assert (moved / DB_NAME).read_bytes() == damaged  # kept as it was found, for whoever wants to look
        assert (moved / SNAPSHOT_DIR / snapshot_file_name(events[0].id)).read_bytes() == JPEG
        assert not (directory / SNAPSHOT_DIR / snapshot_file_name(events[0].id)).exists()
        assert store.health().on_disk and store.health().problem is None

        assert store.events(EventQuery()) == []  # the new database, empty; not the half-read old one
        fresh = event(1, start=NOW + 2000)
        store.save_event(fresh)
        store.save_snapshot(snapshot(fresh))
        assert store.flush()
        assert [e.id for e in store.events(EventQuery())] == [fresh.id] and store.snapshot(fresh.id) == JPEG
    finally:
        store.close()
    again = EventStore(directory)
    try:
        assert again.health().database.state == "ok" and [e.id for e in again.events()] == [fresh.id]
    finally:
        again.close()


READS = {"events": lambda store, ev: store.events(EventQuery(label=ev.label)), "get": lambda store, ev: store.get(ev.id),
         "snapshot": lambda store, ev: store.snapshot(ev.id)}


@pytest.mark.parametrize("read", list(READS))
def test_a_database_corrupted_while_running_gets_an_error_then_a_new_database(tmp_path, read):
    directory = tmp_path / "events"
    store = EventStore(directory, clock=lambda: NOW)
    try:
        first = event(1)
        store.save_event(first)
        assert store.flush() and store.health().database.state == "ok"
        with sqlite3.connect(str(directory / DB_NAME)) as conn:  # everything in the file, none in the WAL
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = (directory / DB_NAME).stat().st_size
        with open(directory / DB_NAME, "r+b") as fh:  # overwritten in place, under the open connection
            fh.write(os.urandom(size))

        with pytest.raises(EventDatabaseUnusable, match="corrupt"):
            READS[read](store, first)
        report = wait_for(lambda: store.health().database.state == "recovered" and store.health().database)
        assert "not a database" in report.reason and (Path(report.moved_to) / DB_NAME).stat().st_size == size

        assert store.events(EventQuery()) == [] and store.get(first.id) is None
        second = event(2)
        store.save_event(second)
        assert store.flush()
        assert [e.id for e in store.events(EventQuery())] == [second.id]
        assert store.health().on_disk
    finally:
        store.close()


def test_a_read_error_that_is_not_corruption_changes_nothing(tmp_path):
    """A database that is merely busy or half created is no reason to move anything."""
    directory = tmp_path / "events"
    store = EventStore(directory, clock=lambda: NOW)
    try:
        store.save_event(event(1))
        assert store.flush()
        blocker = sqlite3.connect(str(directory / DB_NAME), timeout=0)
        blocker.execute("BEGIN EXCLUSIVE")  # WAL readers still read
        try:
            assert [e.id for e in store.events(EventQuery())] == [event(1).id]
        finally:
            blocker.rollback()
            blocker.close()
        assert store.health().database.state == "ok"
        assert sorted(p.name for p in directory.iterdir() if p.name.startswith("corrupt-")) == []
    finally:
        store.close()


@pytest.mark.parametrize("earlier_runs", [True, False], ids=["with snapshots folder", "file alone"])
def test_a_corrupt_database_that_cannot_be_moved_is_reported_and_never_answered_from(tmp_path, earlier_runs):
    """A tmpfs holding the corrupt file, then remounted read-only (needs root)."""
    folder = tmp_path / "readonly"
    with tiny_filesystem(folder, 1024):
        (folder / DB_NAME).write_bytes(os.urandom(16 * 1024))
        if earlier_runs:
            (folder / SNAPSHOT_DIR).mkdir()
        if subprocess.run(["mount", "-o", "remount,ro", str(folder)], capture_output=True).returncode != 0:
            missing("cannot remount the tmpfs read-only (needs root)")
        store = EventStore(folder, clock=lambda: NOW)
        try:
            health = store.health()
            assert not health.on_disk and "cannot open the event database" in health.problem, health
            assert store.save_event(event(1)) and store.flush()  # held in memory, still published by the engine
            with pytest.raises(EventDatabaseUnusable, match="corrupt"):
                store.events(EventQuery())
            # Found at the start, or (when opening failed before looking at the file) by that read.
            report = wait_for(lambda: store.health().database.state == "corrupt" and store.health().database)
            assert "not a database" in report.reason and report.moved_to is None, report
            with pytest.raises(EventDatabaseUnusable, match="corrupt"):
                store.get(event(1).id)
        finally:
            store.close()
