"""Events and event stores for the tests of the event store: one event maker, one store fixture.

Import the fixture into a test module (``from tests.support.event_store import open_store``):
it closes every store it made at the end of the test.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

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
