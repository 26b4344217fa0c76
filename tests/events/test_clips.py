"""An event's clip: the flags in its payload, its size and path in the event database, deleted with it."""
from __future__ import annotations

import sqlite3
import time
from dataclasses import replace

from edge_app.events.database import DB_NAME
from edge_app.events.model import UPDATE, Event, EventMessage
from edge_app.events.store import EventStore
from tests.events.disks import tiny_filesystem
from tests.events.old_schema import database_at
from tests.support.event_store import (DAY_S, NOW, big_snapshot, event, fill_after_first_event,  # noqa: F401
                                       open_store, wait_back_on_disk)  # open_store: a fixture


def test_the_payload_carries_has_clip_and_its_duration():
    ev = event(1, has_clip=True, clip_duration_s=12.345678)
    body = EventMessage(UPDATE, ev, event(1)).to_dict()
    assert body["after"]["has_clip"] is True and body["after"]["clip_duration_s"] == 12.35
    assert body["before"]["has_clip"] is False and body["before"]["clip_duration_s"] == 0.0
    assert Event.from_dict(body["after"]) == replace(ev, clip_duration_s=12.35)


def test_an_event_from_before_clips_reads_as_one_without_a_clip():
    old = event(1).to_dict()
    del old["has_clip"], old["clip_duration_s"]
    assert Event.from_dict(old) == event(1)
    assert Event.from_dict({**old, "clip_duration_s": None}).clip_duration_s == 0.0


def test_the_clip_is_stored_with_its_event_and_survives_a_restart(open_store, tmp_path):
    store = open_store()
    ev = event(1, end_time=NOW + 5)
    store.save_event(ev)
    store.save_clip(ev.id, "events/cam1/clip.mp4", 123_456, 15.5)
    assert store.flush()
    assert store.get(ev.id) == replace(ev, has_clip=True, clip_duration_s=15.5)
    assert store.clip(ev.id).path == "events/cam1/clip.mp4" and store.clip(ev.id).size_bytes == 123_456
    # The engine's next save of the event (without the clip's figures) keeps the clip.
    store.save_event(replace(ev, score=0.9))
    assert store.flush() and store.get(ev.id).has_clip
    store.close()
    again = open_store()
    assert again.get(ev.id) == replace(ev, score=0.9, has_clip=True, clip_duration_s=15.5)
    assert [e.has_clip for e in again.events()] == [True]
    conn = sqlite3.connect(str(tmp_path / "events" / DB_NAME))
    assert conn.execute("SELECT path, size_bytes FROM clips").fetchall() == [("events/cam1/clip.mp4", 123_456)]


def test_a_database_written_before_clips_keeps_its_events(tmp_path):
    folder = tmp_path / "events"
    folder.mkdir()
    conn = database_at(folder, 1)
    with conn:
        conn.execute("INSERT INTO events VALUES ('old-1', 'cam1', 'person', 1, 0.7, 0.8, '[1, 2, 3, 4]', 5.0, 4.0, 6.0,"
                     " '[]', '[]')")
    conn.close()
    store = EventStore(folder, retain_days=100_000, clock=lambda: NOW)
    try:
        old = store.get("old-1")
        assert old is not None and old.has_clip is False and old.clip_duration_s == 0.0 and old.end_time == 6.0
        store.save_clip("old-1", "events/cam1/old.mp4", 10, 1.0)
        assert store.flush() and store.get("old-1").has_clip
    finally:
        store.close()


def test_deleting_an_event_tells_whoever_deletes_its_clip(open_store):
    store = open_store()
    deleted = []
    store.on_deleted(deleted.extend)
    kept, gone = event(1), event(2)
    for ev in (kept, gone):
        store.save_event(ev)
        store.save_clip(ev.id, f"events/{ev.track_id}.mp4", 100, 2.0)
    assert store.flush()
    assert store.delete(gone.id) is True
    assert deleted == [gone.id] and store.clip(gone.id) is None and store.clip(kept.id) is not None
    assert store.delete(gone.id) is False and deleted == [gone.id]
    # A clip that arrives for a deleted event is deleted too, never kept without its event.
    store.save_clip(gone.id, "events/late.mp4", 100, 2.0)
    assert store.flush()
    assert store.clip(gone.id) is None and deleted == [gone.id, gone.id]


def test_retention_deletes_the_clips_of_the_events_it_deletes(open_store):
    clock = {"now": NOW}
    store = open_store(retain_days=7, maintenance_interval_s=0.05, clock=lambda: clock["now"])
    deleted = []
    store.on_deleted(deleted.extend)
    old, young = event(1, start=NOW - 10 * DAY_S, end_time=NOW - 10 * DAY_S + 5), event(2, end_time=NOW + 5)
    for ev in (old, young):
        store.save_event(ev)
        store.save_clip(ev.id, f"events/{ev.track_id}.mp4", 100, 2.0)
    assert store.flush()
    deadline = time.monotonic() + 10
    while not deleted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert deleted == [old.id] and store.get(old.id) is None and store.get(young.id).has_clip


def test_a_clip_the_recorder_removed_is_no_longer_claimed(open_store):
    store = open_store()
    ev = event(1)
    store.save_event(ev)
    store.save_clip(ev.id, "events/1.mp4", 100, 2.0)
    assert store.flush() and store.get(ev.id).has_clip
    store.forget_clip(ev.id)
    assert store.flush()
    assert store.get(ev.id) == ev and store.clip(ev.id) is None


def test_clips_of_a_full_disk_are_held_and_written_when_space_returns(tmp_path):
    """A real full filesystem: a 1 MiB tmpfs, filled with a file after the database is created."""
    with tiny_filesystem(tmp_path / "tiny", 1024) as disk:
        store = EventStore(disk / "events", maintenance_interval_s=0.1, clock=lambda: NOW)
        try:
            first, filler = fill_after_first_event(store, disk)
            held = [event(n, start=NOW + n) for n in range(2, 6)]
            for ev in held:
                store.save_event(ev)
                store.save_snapshot(big_snapshot(ev))
                store.save_clip(ev.id, f"events/{ev.track_id}.mp4", 100 + ev.track_id, 2.0)
            assert store.flush()
            assert not store.health().on_disk
            assert store.get(held[-1].id).has_clip and store.clip(held[-1].id).size_bytes == 105
            assert all(e.has_clip for e in store.events() if e.id != first.id)
            filler.unlink()
            assert wait_back_on_disk(store)
            assert store.get(held[-1].id) == replace(held[-1], has_clip=True, clip_duration_s=2.0, has_snapshot=True)
        finally:
            store.close()
