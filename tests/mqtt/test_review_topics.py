"""R/reviews and each camera's unreviewed alert count against a real Mosquitto, from a real event store."""
from __future__ import annotations

from dataclasses import replace

from edge_app.appliance.reviews import ReviewAnnouncer
from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.events.store import EventStore
from edge_app.review.book import ReviewBook
from edge_app.review.feed import ReviewFeed
from edge_app.review.model import AlertRule
from tests.mqtt.helpers import wait_until

ROOT = "edge_app/dev1"
RULE = AlertRule(frozenset({"person"}))


def event(event_id: str, label: str, start: float, **changes) -> Event:
    return replace(Event(event_id, "cam1", label, 1, 0.8, 0.9, (1.0, 2.0, 3.0, 4.0), start, start), **changes)


def test_review_messages_and_the_alert_count(tmp_path, mosquitto_broker, publisher_factory, mqtt_collector):
    sub = mqtt_collector(mosquitto_broker, [f"{ROOT}/reviews", f"{ROOT}/cameras/+/review/alerts"])
    pub = publisher_factory(mosquitto_broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    store = EventStore(tmp_path / "events")
    try:
        book = ReviewBook(store, gap_s=lambda: 10.0, rule_of=lambda _camera: RULE)
        announcer = ReviewAnnouncer(lambda: pub, ReviewFeed(lambda: 10.0, lambda _camera: RULE), book,
                                    lambda: ["cam1", "cam2"], min_interval_s=0.0)
        announcer.tick()  # at start: every camera's count
        car = event("100.0-cam1-1", "car", 100.0)
        person = event("102.0-cam1-2", "person", 102.0)
        messages = [EventMessage(NEW, car), EventMessage(UPDATE, replace(car, score=0.95), car),  # no item change
                    EventMessage(NEW, person),
                    EventMessage(END, replace(car, end_time=105.0), car),  # the person goes on: no change
                    EventMessage(END, replace(person, end_time=106.0), person),
                    EventMessage(NEW, event("130.0-cam1-3", "car", 130.0))]  # after the gap: a new item
        for message in messages:
            announcer.on_event(message)
            store.save_event(message.after)
        assert store.flush()
        reviews = [m.json() for m in sub.wait_for_count(4, f"{ROOT}/reviews")]
        assert [(r["type"], r["after"]["id"], r["after"]["severity"]) for r in reviews] == [
            ("new", car.id, "detection"), ("update", car.id, "alert"), ("end", car.id, "alert"),
            ("new", "130.0-cam1-3", "detection")]
        assert reviews[2]["after"]["end_time"] == 106.0 and reviews[2]["after"]["labels"] == ["car", "person"]
        assert reviews[0]["before"] is None and reviews[1]["before"]["severity"] == "detection"
        announcer.tick()
        wait_until(lambda: any(m.json()["count"] == 1 for m in sub.messages(f"{ROOT}/cameras/cam1/review/alerts")), 5,
                   "one unreviewed alert")
        assert book.mark([car.id]) == 1
        announcer.tick()
        wait_until(lambda: sub.messages(f"{ROOT}/cameras/cam1/review/alerts")[-1].json()["count"] == 0, 5,
                   "reviewed: none left")
        counts = sub.messages(f"{ROOT}/cameras/cam1/review/alerts")
        assert [m.json()["count"] for m in counts] == [0, 1, 0]
        clock = [0.0]
        spaced = ReviewAnnouncer(lambda: pub, ReviewFeed(lambda: 10.0, lambda _camera: RULE), book, lambda: ["cam1"],
                                 min_interval_s=5.0, monotonic=lambda: clock[0])
        spaced.tick()
        assert book.mark([car.id], reviewed=False) == 1  # counts are stale again, but only 1 s later
        clock[0] = 1.0
        spaced.tick()
        clock[0] = 5.0
        spaced.tick()
        wait_until(lambda: [m.json()["count"] for m in sub.messages(f"{ROOT}/cameras/cam1/review/alerts")][-2:] == [0, 1],
                   5, "counted again once the interval passed")
        assert [m.json()["count"] for m in sub.messages(f"{ROOT}/cameras/cam1/review/alerts")] == [0, 1, 0, 0, 1]
        assert all(m.qos == 1 for m in counts) and [m.json()["count"] for m in
                                                    sub.messages(f"{ROOT}/cameras/cam2/review/alerts")] == [0, 0, 0]
        wait_until(lambda: pub.connected and pub.stats()["queued"] == 0, 5, "acknowledged")
        late = mqtt_collector(mosquitto_broker, f"{ROOT}/#")
        retained = late.wait_for_message(f"{ROOT}/cameras/cam1/review/alerts")
        assert retained.retain and retained.json()["count"] == 1
        assert late.messages(f"{ROOT}/reviews") == []  # not retained, like R/events
    finally:
        store.close()
