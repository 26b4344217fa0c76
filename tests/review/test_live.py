"""Review items as events happen: which ``R/events`` message starts an alert, once per item."""
import dataclasses

import pytest

from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.review.live import MAX_EVENTS_PER_ITEM, LiveReview
from edge_app.review.model import AlertRule


def event(start, label="person", camera="cam1", track=1):
    return Event(id=f"{start:.6f}-{camera}-{track}", camera_id=camera, label=label, track_id=track, score=0.8,
                 top_score=0.9, box=(0, 0, 10, 10), frame_time=start, start_time=start)


def new(ev):
    return EventMessage(NEW, ev)


def update(ev, **changes):
    return EventMessage(UPDATE, dataclasses.replace(ev, **changes), ev)


def end(ev, at):
    return EventMessage(END, dataclasses.replace(ev, end_time=at), ev)


def live(labels=(), zones=(), gap_s=10.0):
    return LiveReview(lambda: gap_s, lambda _camera: AlertRule(frozenset(labels), frozenset(zones)))


def test_the_first_matching_event_starts_the_alert_once_per_item():
    review = live(labels=("person",))
    a, b = event(0, track=1), event(2, track=2)
    start = review.observe(new(a))
    assert start is not None and start.event == a and start.item.id == a.id and start.item.is_alert
    assert review.observe(update(a, score=0.95)) is None
    assert review.observe(new(b)) is None  # same item: no second notification
    assert review.observe(end(a, 5)) is None and review.observe(end(b, 6)) is None
    later = review.observe(new(event(30, track=3)))  # beyond the gap: a new item, a new alert
    assert later is not None and later.item.id != a.id


def test_an_item_that_starts_as_a_detection_alerts_when_an_event_enters_an_alert_zone():
    review = live(zones=("door",))
    a = event(0)
    assert review.observe(new(a)) is None
    start = review.observe(update(a, entered_zones=("door",), current_zones=("door",)))
    assert start is not None and start.item.zones == ("door",)


def test_a_matching_event_joining_within_the_gap_alerts_for_the_item():
    review = live(labels=("person",))
    car = event(0, label="car", track=1)
    assert review.observe(new(car)) is None
    review.observe(end(car, 4))
    start = review.observe(new(event(9, track=2)))
    assert start is not None and start.item.id == car.id and start.item.labels == ("car", "person")


def test_cameras_have_items_of_their_own():
    review = live()
    assert review.observe(new(event(0, camera="a"))) is not None
    assert review.observe(new(event(0.5, camera="b"))) is not None
    assert review.observe(new(event(1, camera="a", track=2))) is None


@pytest.mark.parametrize("gap_s, second_start, alerts_again", [(10, 14.9, False), (10, 15.1, True), (0, 5.0, False)])
def test_the_gap_decides_whether_an_event_starts_a_new_item(gap_s, second_start, alerts_again):
    review = live(gap_s=gap_s)
    first = event(0)
    review.observe(new(first))
    review.observe(end(first, 5))
    assert (review.observe(new(event(second_start, track=2))) is not None) == alerts_again


def test_a_busy_item_keeps_a_bounded_number_of_events():
    review = live(labels=("nobody",))
    for index in range(MAX_EVENTS_PER_ITEM + 50):
        ev = event(index * 0.1, track=index)
        review.observe(new(ev))
        review.observe(end(ev, index * 0.1 + 0.05))
    item = review._items["cam1"]  # the open item of the camera
    assert len(item.events) == MAX_EVENTS_PER_ITEM and item.latest_end() == pytest.approx((MAX_EVENTS_PER_ITEM + 49) * 0.1 + 0.05)
