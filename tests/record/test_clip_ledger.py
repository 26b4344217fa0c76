"""The events' clips as the event messages and the event record tell them: ``has_clip``, the
length so far, the final update once a clip completes, one clip of a clip's ``max_s`` parts.

The clip reports are what a camera recorder's files report (``ClipInfo``); the event store is the real one.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.events.store import EventStore
from edge_app.record.clip_ledger import ClipLedger
from edge_app.record.types import ClipInfo

NOW = 1_800_000_000.0


def event(n: int = 1, camera: str = "cam1", **changes) -> Event:
    base = Event(id=f"{NOW:.3f}-{camera}-{n}", camera_id=camera, label="person", track_id=n, score=0.7,
                 top_score=0.8, box=(1.0, 2.0, 3.0, 4.0), frame_time=NOW + 1, start_time=NOW)
    return replace(base, **changes)


def clip(ev: Event, duration_s: float, complete: bool, part: int = 0) -> ClipInfo:
    return ClipInfo(ev.id, ev.camera_id, NOW - 5, NOW - 5 + duration_s, 4096, f"{ev.camera_id}/events/a.mp4",
                    complete, part)


@pytest.fixture
def ledger_and_store(tmp_path):
    published = []
    store = EventStore(tmp_path / "events", clock=lambda: NOW)
    yield ClipLedger(published.append, store), store, published
    store.close()


def test_an_events_payloads_carry_its_clip_and_a_final_update_its_whole_length(ledger_and_store):
    ledger, store, published = ledger_and_store
    ev = event()
    ledger.started(ev.id)
    new = ledger.decorated(EventMessage(NEW, ev))
    assert new.after.has_clip is True and new.after.clip_duration_s == 0.0
    ledger.clip_reported(clip(ev, 7.5, complete=False))
    update = ledger.decorated(EventMessage(UPDATE, replace(ev, score=0.9), ev))
    assert update.after.has_clip and update.after.clip_duration_s == 7.5 and update.before.clip_duration_s == 7.5
    ended = replace(ev, end_time=NOW + 3)
    end = ledger.decorated(EventMessage(END, ended, ev))
    assert end.after.has_clip and end.after.clip_duration_s == 7.5 and not ledger.recording(ev.id)
    assert published == []  # the end itself goes out through the analysis, not here
    ledger.clip_reported(clip(ev, 13.0, complete=True))
    assert len(published) == 1
    final = published[0]
    assert final.type == UPDATE and final.before == end.after
    assert final.after == replace(end.after, clip_duration_s=13.0)
    assert store.flush()
    assert store.get(ev.id) == replace(ended, has_clip=True, clip_duration_s=13.0)
    assert store.clip(ev.id).path == "cam1/events/a.mp4" and store.clip(ev.id).size_bytes == 4096
    assert (store.clip(ev.id).start_time, store.clip(ev.id).end_time) == (NOW - 5, NOW + 8)


def test_an_event_without_a_clip_goes_out_as_it_is(ledger_and_store):
    ledger, _store, published = ledger_and_store
    ev = event()
    message = EventMessage(NEW, ev)
    assert ledger.decorated(message) == message
    assert ledger.decorated(EventMessage(END, replace(ev, end_time=NOW + 2), ev)).after.has_clip is False
    assert published == []


def test_a_clip_longer_than_max_s_counts_as_one_clip_of_its_parts(ledger_and_store):
    ledger, store, published = ledger_and_store
    ev = event()
    ledger.started(ev.id)
    ledger.decorated(EventMessage(NEW, ev))
    ledger.clip_reported(ClipInfo(ev.id, "cam1", NOW - 5, NOW + 295, 1000, "cam1/events/a.mp4", True))
    second = ClipInfo(ev.id, "cam1", NOW + 295, NOW + 300, 100, "cam1/events/a__p1.mp4", False, part=1)
    ledger.clip_reported(second)
    assert published == []  # the event is still open: its clip goes on
    end = ledger.decorated(EventMessage(END, replace(ev, end_time=NOW + 298), ev))
    assert end.after.clip_duration_s == 305.0
    ledger.clip_reported(replace(second, end=NOW + 303, bytes=150, complete=True))
    assert [m.after.clip_duration_s for m in published] == [308.0]
    assert store.flush()
    record = store.clip(ev.id)
    assert (record.path, record.size_bytes, record.start_time, record.end_time) == (
        "cam1/events/a.mp4", 1150, NOW - 5, NOW + 303)


def test_a_clip_retention_removed_leaves_the_event_record(ledger_and_store):
    ledger, store, _published = ledger_and_store
    ev = event(end_time=NOW + 2)
    store.save_event(ev)
    ledger.clip_reported(clip(ev, 4.0, complete=True))
    assert store.flush() and store.clip(ev.id) is not None
    ledger.clips_removed([ev.id])
    assert store.flush() and store.clip(ev.id) is None


def test_a_deleted_event_hears_nothing_more_of_its_clip(ledger_and_store):
    ledger, _store, published = ledger_and_store
    ev = event()
    ledger.started(ev.id)
    ledger.decorated(EventMessage(END, replace(ev, end_time=NOW + 2), ev))  # waits for its clip
    ledger.forget([ev.id])
    assert ledger.decorated(EventMessage(UPDATE, ev, ev)).after.has_clip is False
    ledger.clip_reported(clip(ev, 4.0, complete=True))
    assert published == []
