"""The event store on a real SQLite database in temporary folders."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

from edge_app.appliance.analysis import EventSink
from edge_app.events.counts import LineTotals
from edge_app.events.database import DB_NAME, SNAPSHOT_DIR
from edge_app.events.model import Event
from edge_app.events.query import MAX_LIMIT, EventQuery, snapshot_file_name
from edge_app.events.store import EventStore
from tests.events.disks import read_only_folder, tiny_filesystem
from tests.support.event_store import (DAY_S, JPEG, NOW, big_snapshot, event, fill_after_first_event,  # noqa: F401
                                       open_store, snapshot, wait_back_on_disk)  # open_store: a fixture


def test_an_event_is_saved_and_updated_in_place(open_store):
    store = open_store()
    first = event(1)
    store.save_event(first)
    store.save_event(replace(first, score=0.9, top_score=0.9, current_zones=("drive",), entered_zones=("drive",)))
    assert store.flush()
    assert store.events() == [replace(first, score=0.9, top_score=0.9, current_zones=("drive",), entered_zones=("drive",))]
    assert store.get(first.id).entered_zones == ("drive",)
    assert store.get("no-such-event") is None
    assert store.health().problem is None and store.health().on_disk


def test_one_writer_thread_and_a_wal_database_in_the_events_folder(open_store, tmp_path):
    def writers():
        return [t for t in threading.enumerate() if t.name == "events:writer"]

    before = len(writers())
    store = open_store(tmp_path / "events")
    for n in range(20):  # many writes, still one writer: readers never wait for it, nor it for them
        store.save_event(event(n))
    assert store.flush()
    assert len(writers()) == before + 1
    with sqlite3.connect(str(tmp_path / "events" / DB_NAME)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    assert len(writers()) == before


def test_filters_order_and_limits(open_store):
    store = open_store()
    saved = [
        event(1, "cam1", "person", NOW - 300, entered_zones=("drive", "porch")),
        event(2, "cam1", "car", NOW - 200, entered_zones=("drive",)),
        event(3, "cam2", "person", NOW - 100),
        event(4, "cam2", "dog", NOW - 50, entered_zones=("porch",)),
    ]
    for ev in saved:
        store.save_event(ev)
    assert store.flush()
    ids = lambda query: [e.id for e in store.events(query)]  # noqa: E731
    assert ids(EventQuery()) == [saved[3].id, saved[2].id, saved[1].id, saved[0].id]  # newest first
    assert ids(EventQuery(camera="cam1")) == [saved[1].id, saved[0].id]
    assert ids(EventQuery(label="person")) == [saved[2].id, saved[0].id]
    assert ids(EventQuery(zone="porch")) == [saved[3].id, saved[0].id]
    assert ids(EventQuery(zone="drive", label="car")) == [saved[1].id]
    assert ids(EventQuery(after=NOW - 200)) == [saved[3].id, saved[2].id]
    assert ids(EventQuery(before=NOW - 100)) == [saved[1].id, saved[0].id]
    assert ids(EventQuery(after=NOW - 250, before=NOW - 60)) == [saved[2].id, saved[1].id]
    assert ids(EventQuery(camera="cam3")) == []
    assert ids(EventQuery(limit=2)) == [saved[3].id, saved[2].id]


def test_limit_defaults_to_50_and_never_exceeds_500(open_store):
    store = open_store(queue_size=2000)
    for n in range(MAX_LIMIT + 20):
        assert store.save_event(event(n, start=NOW - n))
    assert store.flush()
    assert len(store.events()) == 50
    newest = store.events(EventQuery(limit=10_000))
    assert len(newest) == MAX_LIMIT
    assert newest[0].track_id == 0 and newest[-1].track_id == MAX_LIMIT - 1
    assert len(store.events(EventQuery(limit=0))) == 1


def test_delete_removes_the_row_and_the_snapshot_file(open_store, tmp_path):
    store = open_store()
    kept, gone = event(1), event(2)
    for ev in (kept, gone):
        store.save_event(ev)
        store.save_snapshot(snapshot(ev))
    assert store.flush()
    files = tmp_path / "events" / SNAPSHOT_DIR
    assert sorted(p.name for p in files.iterdir()) == sorted(snapshot_file_name(e.id) for e in (kept, gone))
    assert store.get(gone.id).has_snapshot and store.snapshot(gone.id) == JPEG

    assert store.delete(gone.id) is True
    assert store.get(gone.id) is None and store.snapshot(gone.id) is None
    assert [p.name for p in files.iterdir()] == [snapshot_file_name(kept.id)]
    assert store.delete(gone.id) is False
    # The engine's next update of a deleted open event does not bring it back.
    store.save_event(replace(gone, score=0.95))
    store.save_snapshot(snapshot(gone))
    assert store.flush()
    assert store.get(gone.id) is None and [e.id for e in store.events()] == [kept.id]
    # Deleting an id that does not exist yet does not keep that event out later.
    future = event(77)
    assert store.delete(future.id) is False
    store.save_event(future)
    assert store.flush() and store.get(future.id) == future


def test_odd_event_ids_never_become_paths(open_store, tmp_path):
    store = open_store()
    odd = event(1, id="../../escape/..")
    store.save_event(odd)
    store.save_snapshot(snapshot(odd))
    assert store.flush()
    names = [p.name for p in (tmp_path / "events" / SNAPSHOT_DIR).iterdir()]
    assert len(names) == 1 and names[0].startswith("_") and "/" not in names[0] and ".." not in names[0]
    assert not (tmp_path / "escape").exists()
    assert store.snapshot(odd.id) == JPEG
    assert store.delete(odd.id) and list((tmp_path / "events" / SNAPSHOT_DIR).iterdir()) == []


def test_retention_by_age_deletes_old_events_and_their_snapshots(open_store, tmp_path):
    clock = {"now": NOW}
    store = open_store(retain_days=7, maintenance_interval_s=0.05, clock=lambda: clock["now"])
    old = event(1, start=NOW - 9 * DAY_S, end_time=NOW - 8 * DAY_S)
    recent = event(2, start=NOW - 2 * DAY_S, end_time=NOW - 2 * DAY_S + 60)
    still_open = event(3, start=NOW - 10 * DAY_S)  # a car parked for ten days is not deleted under it
    for ev in (old, recent, still_open):
        store.save_event(ev)
        store.save_snapshot(snapshot(ev))
    assert store.flush()
    deadline = time.monotonic() + 5
    while store.get(old.id) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.get(old.id) is None
    assert {e.id for e in store.events()} == {recent.id, still_open.id}
    assert snapshot_file_name(old.id) not in {p.name for p in (tmp_path / "events" / SNAPSHOT_DIR).iterdir()}

    store.set_retention(retain_days=1, max_mb=1024)  # a configuration change: recent is 2 days old
    deadline = time.monotonic() + 5
    while store.get(recent.id) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [e.id for e in store.events()] == [still_open.id]


def test_retention_by_size_deletes_the_oldest_first(open_store, tmp_path):
    jpeg = b"\xff\xd8" + os.urandom(50 * 1024)
    store = open_store(max_mb=0.5, maintenance_interval_s=0.05)
    saved = [event(n, start=NOW - 1000 + n, end_time=NOW - 900 + n) for n in range(20)]  # 20 x 50 KiB = 1 MB
    for ev in saved:
        store.save_event(ev)
        store.save_snapshot(snapshot(ev, jpeg))
    assert store.flush()
    deadline = time.monotonic() + 5
    while len(store.events()) == len(saved) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    left = [e.track_id for e in store.events()]
    assert 0 < len(left) < len(saved)
    assert left == list(range(19, 19 - len(left), -1))  # the newest survived, the oldest went
    folder = tmp_path / "events"
    on_disk = sum(p.stat().st_size for p in (folder / SNAPSHOT_DIR).iterdir()) + (folder / DB_NAME).stat().st_size
    assert on_disk <= 0.5 * 1024 * 1024
    assert len(list((folder / SNAPSHOT_DIR).iterdir())) == len(left)


def test_a_restart_keeps_events_snapshots_and_line_counts(open_store, tmp_path):
    store = open_store()
    ev = event(1, entered_zones=("drive",))
    store.save_event(ev)
    store.save_snapshot(snapshot(ev))
    store.save_line_counts("cam1", {"gate": LineTotals(3, 1), "exit": LineTotals(0, 0)})
    store.save_line_counts("cam2", {"door": LineTotals(0, 2)})
    store.save_line_counts("cam1", {"gate": LineTotals(4, 1)})
    store.close(end_time=NOW + 30)

    again = open_store()
    assert again.load_line_counts() == {"cam1": {"gate": LineTotals(4, 1), "exit": LineTotals(0, 0)},
                                        "cam2": {"door": LineTotals(0, 2)}}
    assert again.get(ev.id) == replace(ev, end_time=NOW + 30, has_snapshot=True)
    assert again.snapshot(ev.id) == JPEG


def test_close_ends_open_events_and_keeps_ended_ones(open_store):
    store = open_store()
    still_open, ended = event(1), event(2, end_time=NOW + 5)
    store.save_event(still_open)
    store.save_event(ended)
    store.close(end_time=NOW + 60)
    store.close(end_time=NOW + 999)  # a second close changes nothing
    assert store.save_event(event(3)) is False  # after close: dropped, not raised

    again = open_store()
    assert again.get(still_open.id).end_time == NOW + 60
    assert again.get(ended.id).end_time == NOW + 5
    assert again.get(event(3).id) is None


def test_events_left_open_by_a_crash_end_at_their_last_frame(tmp_path):
    folder = tmp_path / "events"
    script = textwrap.dedent(f"""
        import os
        from edge_app.events.store import EventStore
        from tests.events.test_store import event
        store = EventStore({str(folder)!r})
        store.save_event(event(1))
        assert store.flush()
        os._exit(0)  # no close: as if the process was killed
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).resolve().parents[2], timeout=60)
    store = EventStore(folder)
    try:
        assert store.get(event(1).id).end_time == event(1).frame_time
    finally:
        store.close()


def test_callers_never_wait_for_a_busy_disk(open_store, tmp_path):
    store = open_store(queue_size=8)
    assert store.flush()
    blocker = sqlite3.connect(str(tmp_path / "events" / DB_NAME), timeout=0)
    blocker.execute("BEGIN IMMEDIATE")  # the writer now waits for the database lock
    try:
        accepted, slowest_s = 0, 0.0
        for n in range(200):
            started = time.perf_counter()
            accepted += store.save_event(event(n))
            slowest_s = max(slowest_s, time.perf_counter() - started)
        health = store.health()
        assert slowest_s < 0.2  # the writer is stuck for up to 5 s meanwhile
        assert accepted < 200 and health.dropped == 200 - accepted
    finally:
        blocker.rollback()
        blocker.close()
    assert store.flush(timeout_s=15)
    assert len(store.events(EventQuery(limit=500))) == accepted


def test_queued_snapshots_are_bounded_in_bytes(open_store, tmp_path):
    store = open_store(queue_size=500)
    assert store.flush()
    big = b"\xff\xd8" + bytes(1024 * 1024)
    blocker = sqlite3.connect(str(tmp_path / "events" / DB_NAME), timeout=0)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        accepted = sum(store.save_snapshot(snapshot(event(n), big)) for n in range(100))
        assert 28 <= accepted <= 32  # 32 MiB waiting at most, the batch in the writer's hands included
        assert store.save_event(event(1000))  # events still fit: only snapshots are refused
    finally:
        blocker.rollback()
        blocker.close()
    assert store.flush(timeout_s=15)
    assert store.save_snapshot(snapshot(event(1), big))  # the budget is given back once written


def test_a_read_only_folder_is_reported_and_events_stay_readable(tmp_path):
    """The folder is a tmpfs mounted read-only when running as root, else a chmod 0500 folder."""
    folder = tmp_path / "readonly"
    with read_only_folder(folder) as how:
        store = EventStore(folder / "events")
        try:
            ev = event(1)
            assert store.save_event(ev) and store.save_snapshot(snapshot(ev))
            store.save_line_counts("cam1", {"gate": LineTotals(1, 0)})
            assert store.flush()
            health = store.health()
            assert not health.on_disk and health.problem, how
            assert "cannot open the event database" in health.problem
            assert health.held_in_memory == 1
            assert store.get(ev.id) == replace(ev, has_snapshot=True)
            assert store.snapshot(ev.id) == JPEG
            assert store.load_line_counts() == {"cam1": {"gate": LineTotals(1, 0)}}
            assert store.delete(ev.id) and store.get(ev.id) is None
        finally:
            store.close()


def test_a_full_disk_is_reported_and_the_store_recovers_when_space_returns(tmp_path):
    """A real full filesystem: a 1 MiB tmpfs, filled with a file after the database is created."""
    with tiny_filesystem(tmp_path / "tiny", 1024) as disk:
        store = EventStore(disk / "events", maintenance_interval_s=0.1)
        try:
            first, filler = fill_after_first_event(store, disk)

            held = [event(n, start=NOW + n) for n in range(2, 6)]
            for ev in held:
                assert store.save_event(ev)
                assert store.save_snapshot(big_snapshot(ev))
            assert store.flush()
            health = store.health()
            assert not health.on_disk and health.held_in_memory >= 1
            assert "full" in health.problem or "No space left" in health.problem, health.problem
            assert {e.id for e in store.events()} == {first.id} | {e.id for e in held}
            assert store.snapshot(held[-1].id) is not None

            filler.unlink()
            assert wait_back_on_disk(store) and store.health().held_in_memory == 0
        finally:
            store.close(end_time=NOW + 100)
        again = EventStore(disk / "events")
        try:
            assert {e.id for e in again.events()} == {first.id} | {e.id for e in held}
            assert all(e.end_time is not None for e in again.events())
            assert again.get(held[-1].id).has_snapshot
        finally:
            again.close()


def test_the_store_is_what_the_analysis_hub_writes_to():
    """``AnalysisHub`` takes any ``EventSink``; the store must offer every method of it."""
    import inspect

    for name in ("save_event", "save_snapshot", "save_line_counts", "load_line_counts"):
        wanted = [p.name for p in inspect.signature(getattr(EventSink, name)).parameters.values()]
        assert [p.name for p in inspect.signature(getattr(EventStore, name)).parameters.values()] == wanted, name
