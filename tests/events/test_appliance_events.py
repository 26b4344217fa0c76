"""The appliance answers the event routes from the event store it is given."""
from __future__ import annotations

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import parse_config
from edge_app.events.query import EventQuery
from edge_app.events.store import EventStore
from edge_app.reporting.protocol import CountsReport
from tests.events.test_store import JPEG, event, snapshot

CONFIG = {"device_id": "dev", "cameras": [{"id": "cam1", "source": "test://box"}], "model": {"path": "m.onnx"},
          "mqtt": {"enabled": False}, "api": {"enabled": False}}


def test_without_a_store_there_are_no_events():
    appliance = Appliance(parse_config(CONFIG))
    assert appliance.reads.events(EventQuery()) == []
    assert appliance.reads.event("1.000-cam1-1") is None and appliance.reads.event_snapshot("1.000-cam1-1") is None
    assert appliance.event_deletion.delete_event("1.000-cam1-1") is False
    assert appliance.reads.counts() == CountsReport()


def test_with_a_store(tmp_path):
    store = EventStore(tmp_path / "events")
    appliance = Appliance(parse_config(CONFIG), event_store=store)
    try:
        ev = event(1)
        store.save_event(ev)
        store.save_snapshot(snapshot(ev))
        assert store.flush()
        assert [e.id for e in appliance.reads.events(EventQuery(camera="cam1"))] == [ev.id]
        assert appliance.reads.event(ev.id).has_snapshot and appliance.reads.event_snapshot(ev.id) == JPEG
        assert appliance.event_deletion.delete_event(ev.id) and appliance.reads.event(ev.id) is None
    finally:
        store.close()
