"""Events and event stores for the tests of the event store: one event maker, one store fixture.

Import the fixture into a test module (``from tests.support.event_store import open_store``):
it closes every store it made at the end of the test.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Tuple

import pytest

from edge_app.events.model import Event, Snapshot
from edge_app.events.store import EventStore

DAY_S = 86400.0
NOW = 1_800_000_000.0
JPEG = b"\xff\xd8\xff\xe0" + b"\x10" * 2000 + b"\xff\xd9"


def event(n: int, camera: str = "cam1", label: str = "person", start: float = NOW, **changes) -> Event:
    """Event ``n`` of ``camera``, started at ``start``; ``changes`` replace any field."""
    base = Event(id=f"{start:.3f}-{camera}-{n}", camera_id=camera, label=label, track_id=n, score=0.7,
                 top_score=0.8, box=(10.0, 20.0, 110.0, 220.0), frame_time=start + 1.0, start_time=start)
    return replace(base, **changes)


def snapshot(ev: Event, jpeg: bytes = JPEG) -> Snapshot:
    return Snapshot(ev.id, ev.camera_id, ev.label, ev.top_score, ev.frame_time, jpeg)


@pytest.fixture
def open_store(tmp_path):
    """``open_store(directory=tmp_path / "events", **kwargs)``: an EventStore on a clock stopped at NOW."""
    stores = []

    def make(directory: Path = tmp_path / "events", **kwargs) -> EventStore:
        kwargs.setdefault("clock", lambda: NOW)
        store = EventStore(directory, **kwargs)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


def fill_after_first_event(store: EventStore, disk: Path) -> Tuple[Event, Path]:
    """Write event 1 to disk, then fill ``disk`` (a ``tests.events.disks.tiny_filesystem``): the event and the filler."""
    from tests.events.disks import fill

    first = event(1)
    store.save_event(first)
    assert store.flush() and store.health().on_disk
    return first, fill(disk)


def big_snapshot(ev: Event) -> Snapshot:
    """A 64 KiB snapshot that does not compress: a few of them no longer fit a full tiny disk."""
    return snapshot(ev, b"\xff\xd8" + os.urandom(64 * 1024))


def wait_back_on_disk(store: EventStore, timeout_s: float = 10.0) -> bool:
    """Whether the store writes to disk again within ``timeout_s`` (its writer retries every maintenance interval)."""
    deadline = time.monotonic() + timeout_s
    while not store.health().on_disk and time.monotonic() < deadline:
        time.sleep(0.05)
    return store.health().on_disk


def seed_store(directory: Path, events: Iterable[Event], with_clip: Callable[[Event], bool] = lambda ev: False) -> None:
    """Write ``events`` (ended ones) through an EventStore in ``directory``, as the appliance writes
    them, with a 3 s clip record for each that ``with_clip`` picks; waits whenever the writer's
    queue is full, and closes the store once everything is on disk."""
    store = EventStore(directory)
    try:
        for ev in events:
            while not store.save_event(ev):  # the writer's queue is full: let it catch up
                store.flush(30)
            if with_clip(ev):
                while not store.save_clip(ev.id, f"events/{ev.id}.mp4", 1000, 3.0, ev.start_time, ev.start_time + 3):
                    store.flush(30)
        assert store.flush(60), "the event store did not write the seeded events"
    finally:
        store.close()
