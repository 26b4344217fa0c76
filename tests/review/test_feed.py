"""R/reviews messages from event messages: new, update when the item changes, end, and joining again."""
from __future__ import annotations

from dataclasses import replace

import pytest

from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.review import live
from edge_app.review.feed import ReviewFeed
from edge_app.review.model import AlertRule

GAP_S = 10.0


def event(n: int, label: str, start: float, camera: str = "cam1", **changes) -> Event:
    return replace(Event(f"{start:.1f}-{camera}-{n}", camera, label, n, 0.8, 0.9, (1.0, 2.0, 3.0, 4.0), start, start),
                   **changes)


def feed() -> ReviewFeed:
    return ReviewFeed(lambda: GAP_S, lambda _camera: AlertRule(frozenset({"person"})))


def sent(review: ReviewFeed, messages):
    out = []
    for message in messages:
        answer = review.observe(message)
        if answer is not None:
            out.append((answer.type, answer.after.id, answer.after.severity, answer.after.end_time))
    return out


def test_an_item_ends_and_an_event_within_the_gap_opens_it_again():
    car = event(1, "car", 100.0)
    late = event(2, "person", 112.0)
    assert sent(feed(), [
        EventMessage(NEW, car),
        EventMessage(UPDATE, replace(car, score=0.5, box=(2.0, 2.0, 4.0, 4.0)), car),  # the item says the same
        EventMessage(END, replace(car, end_time=104.0), car),
        EventMessage(NEW, late),  # 8 s after the end: joins, open again and now an alert
        EventMessage(END, replace(late, end_time=115.0), late),
        EventMessage(NEW, event(3, "car", 126.0)),  # 11 s after: a new item
    ]) == [(NEW, car.id, "detection", None), (END, car.id, "detection", 104.0), (UPDATE, car.id, "alert", None),
           (END, car.id, "alert", 115.0), (NEW, "126.0-cam1-3", "detection", None)]


def test_cameras_have_items_of_their_own():
    a, b = event(1, "car", 100.0, "cam1"), event(1, "person", 101.0, "cam2")
    assert sent(feed(), [EventMessage(NEW, a), EventMessage(NEW, b)]) == [
        (NEW, a.id, "detection", None), (NEW, b.id, "alert", None)]


def test_the_first_event_names_the_item_when_the_cap_lets_it_go(monkeypatch):
    monkeypatch.setattr(live, "MAX_EVENTS_PER_ITEM", 3)
    review = feed()
    first = event(0, "car", 100.0)
    review.observe(EventMessage(NEW, first))
    review.observe(EventMessage(END, replace(first, end_time=100.5), first))
    messages = []
    for n in range(1, 6):
        one = event(n, "car", 100.0 + n)
        messages.append(review.observe(EventMessage(NEW, one)))
        review.observe(EventMessage(END, replace(one, end_time=100.5 + n), one))
    assert {m.after.id for m in messages if m is not None} == {first.id}
    assert all(m.after.start_time == 100.0 for m in messages if m is not None)


@pytest.mark.parametrize("gap_s, items", [(0.0, 2), (5.0, 1)])
def test_the_gap_is_read_per_message(gap_s, items):
    review = ReviewFeed(lambda: gap_s, lambda _camera: AlertRule())
    one, two = event(1, "car", 100.0, end_time=101.0), event(2, "car", 104.0)
    answers = [review.observe(EventMessage(NEW, one)), review.observe(EventMessage(NEW, two))]
    assert len({a.after.id for a in answers}) == items


def test_an_event_that_started_earlier_renames_the_item_as_stored():
    later, earlier = event(2, "car", 100.5), event(1, "person", 100.0)  # the person was confirmed a moment later
    tie = event(0, "car", 100.0)  # same start, smaller id
    review = feed()
    answers = [review.observe(EventMessage(NEW, one)) for one in (later, earlier, tie)]
    assert [(a.type, a.before and a.before.id, a.after.id, a.after.start_time) for a in answers] == [
        (NEW, None, later.id, 100.5), (UPDATE, later.id, earlier.id, 100.0), (UPDATE, earlier.id, tie.id, 100.0)]
