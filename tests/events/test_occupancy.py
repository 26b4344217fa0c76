"""Occupancy events (docs/analytics.md, "Dwell and loitering"): OccupancyWatch alone, times passed in."""
import pytest

from edge_app.events.lifecycle import Sighting
from edge_app.events.model import END, NEW, OCCUPANCY, UPDATE, Event, Occupancy
from edge_app.events.occupancy import NO_TRACK, OccupancyWatch, occupancy_event_id
from edge_app.events.query import valid_event_id

T0 = 1_800_000_000.0


def people(*boxes_and_scores):
    return [Sighting(i, "person", score, score, box, T0) for i, (box, score) in enumerate(boxes_and_scores)]


def run(watch, counts, inside=lambda zone: []):
    """``counts``: per frame (0.1 s apart) ``{zone: {label: n}}``; ``(frame, message)`` of every message."""
    return [(f, m) for f, occupants in enumerate(counts) for m in watch.check(T0 + f / 10, occupants, inside)]


@pytest.mark.parametrize("people_per_frame, expected", [
    # limit 2: over with 3, peaks at 4, back to 2
    ([1, 2, 3, 3, 4, 4, 3, 2, 1], [(2, NEW, 3), (4, UPDATE, 4), (7, END, 2)]),
    # a count that falls but stays over sends nothing; only a new peak updates
    ([3, 4, 3, 4, 5, 3, 0], [(0, NEW, 3), (1, UPDATE, 4), (4, UPDATE, 5), (6, END, 0)]),
    # at the limit is not over it
    ([2, 2, 1, 2], []),
    # over twice: two events, each with its own id
    ([3, 2, 3, 1], [(0, NEW, 3), (1, END, 2), (2, NEW, 3), (3, END, 1)]),
])
def test_start_peak_updates_and_end(people_per_frame, expected):
    watch = OccupancyWatch("cam1", {"hall": 2})
    got = run(watch, [{"hall": {"person": n}} for n in people_per_frame])
    assert [(f, m.type, m.after.occupancy.count) for f, m in got] == expected
    assert all(m.after.type == OCCUPANCY and m.after.occupancy.max_objects == 2 for _, m in got)
    starts = [m.after.id for _, m in got if m.type == NEW]
    assert len(set(starts)) == len(starts)
    assert watch.open_events() == []


def test_the_event_carries_zone_labels_count_peak_and_limit():
    watch = OccupancyWatch("cam1", {"hall": 1}, model="yolo")
    inside = people(((10, 20, 50, 120), 0.9), ((100, 30, 140, 130), 0.7))
    (_, new), (_, end) = run(watch, [{"hall": {"person": 1, "dog": 1}}, {"hall": {"person": 1}}], lambda zone: inside)
    event = new.after
    assert new.before is None and event.id == occupancy_event_id("cam1", "hall", T0)
    assert (event.camera_id, event.model, event.type, event.track_id) == ("cam1", "yolo", OCCUPANCY, NO_TRACK)
    assert (event.current_zones, event.entered_zones, event.start_time, event.end_time) == (("hall",), ("hall",), T0, None)
    # a tie of labels: the first by name; the box around both people, the lower of their scores
    assert event.label == "dog" and event.box == (10, 20, 140, 130) and event.score == event.top_score == 0.7
    assert event.occupancy == Occupancy({"dog": 1, "person": 1}, 2, 1)
    assert event.to_dict()["occupancy"] == {"objects": {"dog": 1, "person": 1}, "count": 2, "peak_objects": 2,
                                            "max_objects": 1}
    assert end.type == END and end.before == event
    assert end.after.end_time == pytest.approx(T0 + 0.1) and end.after.current_zones == ()
    assert end.after.occupancy == Occupancy({"person": 1}, 2, 1)  # the count now, the peak kept


@pytest.mark.parametrize("occupants, label", [
    ({"person": 3}, "person"),
    ({"car": 1, "person": 2}, "person"),   # the most numerous
    ({"person": 2, "car": 2}, "car"),       # a tie: the first by name
])
def test_label_is_the_most_numerous_inside(occupants, label):
    (_, new), = run(OccupancyWatch("cam1", {"lot": 1}), [{"lot": occupants}])
    assert new.after.label == label


def test_zones_are_watched_apart_and_zones_without_a_limit_never():
    watch = OccupancyWatch("cam1", {"a": 0, "b": 3})
    got = run(watch, [{"a": {"person": 1}, "b": {"person": 3}, "c": {"person": 9}}])
    assert [(m.type, m.after.current_zones) for _, m in got] == [(NEW, ("a",))]


def test_end_all_ends_every_open_event_now():
    watch = OccupancyWatch("cam1", {"a": 0, "b": 0})
    run(watch, [{"a": {"person": 1}, "b": {"car": 2}}])
    ended = watch.end_all(T0 + 5)
    assert [(m.type, m.after.current_zones, m.after.end_time, m.after.occupancy.count, m.after.occupancy.peak_objects)
            for m in ended] == [(END, (), T0 + 5, 0, 1), (END, (), T0 + 5, 0, 2)]
    assert watch.open_events() == [] and watch.end_all(T0 + 6) == []


def test_snapshot_taken_marks_the_open_event():
    watch = OccupancyWatch("cam1", {"a": 0})
    (_, new), = run(watch, [{"a": {"person": 1}}])
    assert watch.snapshot_taken("nope") is None
    assert watch.snapshot_taken(new.after.id).has_snapshot
    (end,) = watch.end_all(T0 + 1)
    assert end.after.has_snapshot


@pytest.mark.parametrize("camera, zone", [("cam1", "hall"), ("c" * 60, "z" * 60)])
def test_event_ids_are_valid_and_differ_by_start(camera, zone):
    first, second = occupancy_event_id(camera, zone, T0), occupancy_event_id(camera, zone, T0 + 1)
    assert valid_event_id(first) and valid_event_id(second) and first != second


@pytest.mark.parametrize("data, occupancy", [
    ({}, None),                                                    # an event from before occupancy events
    ({"occupancy": None}, None),
    ({"occupancy": {"objects": {"person": 6}, "count": 6, "peak_objects": 7, "max_objects": 5}},
     Occupancy({"person": 6}, 7, 5)),
])
def test_event_dicts_round_trip_occupancy(data, occupancy):
    base = Event("1.0-cam1-3", "cam1", "person", 3, 0.8, 0.9, (1.0, 2.0, 3.0, 4.0), 5.0, 1.0).to_dict()
    base.pop("occupancy")
    event = Event.from_dict({**base, **data})
    assert event.occupancy == occupancy
    assert Event.from_dict(event.to_dict()) == event
