"""The appliance's review items: marks kept across a restart (the store closed and opened again on
the same folder), the configuration's rules read at query time, and the notifier in the status."""
from __future__ import annotations

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import parse_config
from edge_app.events.model import Event
from edge_app.events.store import EventStore
from edge_app.review.query import ReviewQuery

CONFIG = {"device_id": "dev", "cameras": [{"id": "cam1", "source": "test://box"}], "model": {"path": "m.onnx"},
          "mqtt": {"enabled": False}, "api": {"enabled": False},
          "review": {"gap_s": 10, "alerts": {"labels": ["person"]}},
          "notifications": {"targets": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/alerts",
                                         "secret": "a-secret-of-at-least-16-chars"}]}}


def event(n: int, label: str, start: float) -> Event:
    return Event(id=f"{start:.3f}-cam1-{n}", camera_id="cam1", label=label, track_id=n, score=0.7, top_score=0.8,
                 box=(1.0, 2.0, 3.0, 4.0), frame_time=start + 1, start_time=start, end_time=start + 2)


def items(appliance: Appliance, **filters) -> list:
    return [(entry.item.id, entry.item.severity, entry.item.reviewed)
            for entry in appliance.reads.reviews().page(ReviewQuery(**filters)).items]


def test_marks_survive_a_restart(tmp_path):
    events = [event(1, "car", 100.0), event(2, "person", 105.0), event(3, "car", 200.0)]
    store = EventStore(tmp_path / "events")
    appliance = Appliance(parse_config(CONFIG), event_store=store)
    for one in events:
        store.save_event(one)
    assert store.flush()
    assert items(appliance) == [(events[2].id, "detection", False), (events[0].id, "alert", False)]
    assert appliance.reads.reviews().mark([events[0].id]) == 1
    store.close()

    store = EventStore(tmp_path / "events")
    try:
        again = Appliance(parse_config(CONFIG), event_store=store)
        assert items(again, reviewed=True) == [(events[0].id, "alert", True)]
        # Rules are the configuration's at query time: with cars as alerts too, the later item is one.
        cars_too = Appliance(parse_config({**CONFIG, "review": {"gap_s": 10, "alerts": {"labels": ["person", "car"]}}}),
                             event_store=store)
        assert items(cars_too, severity="alert") == [(events[2].id, "alert", False), (events[0].id, "alert", True)]
    finally:
        store.close()


def test_without_a_store_there_are_no_review_items():
    assert Appliance(parse_config(CONFIG)).reads.reviews() is None


def test_the_status_reports_each_notification_target():
    status = Appliance(parse_config(CONFIG)).reads.status().to_dict()
    [target] = status["notifications"]["targets"]
    assert target["name"] == "hook" and target["type"] == "webhook" and target["destination"] == "http://127.0.0.1:9"
    assert (target["sent"], target["failed"], target["last_delivery_time"], target["last_error"]) == (0, 0, None, None)
