"""Review items from a camera's events: grouping by overlap and gap, and the alert rule."""
import pytest

from edge_app.events.model import Event
from edge_app.review.grouping import group_by_camera, group_events
from edge_app.review.model import ALERT, DETECTION, AlertRule


def event(start, end, label="person", camera="cam1", zones=(), track=None):
    track = int(start) if track is None else track
    return Event(id=f"{start:.6f}-{camera}-{track}", camera_id=camera, label=label, track_id=track, score=0.8,
                 top_score=0.9, box=(0, 0, 10, 10), frame_time=end if end is not None else start, start_time=start,
                 end_time=end, entered_zones=tuple(zones), current_zones=())


EVERYTHING = AlertRule()


# (what, events as (start, end), gap_s, the items as lists of event starts)
GROUPING = [
    ("one event", [(0, 5)], 10, [[0]]),
    ("overlap", [(0, 5), (3, 8)], 0, [[0, 3]]),
    ("one inside another", [(0, 20), (5, 6), (21, 22)], 0, [[0, 5], [21]]),
    ("within the gap", [(0, 5), (12, 14)], 10, [[0, 12]]),
    ("exactly at the gap", [(0, 5), (15, 16)], 10, [[0, 15]]),
    ("beyond the gap", [(0, 5), (15.5, 16)], 10, [[0], [15.5]]),
    ("gap measured from the latest end, not the last event's", [(0, 30), (2, 3), (35, 36)], 10, [[0, 2, 35]]),
    ("a chain of small gaps", [(0, 1), (5, 6), (10, 11), (15, 16)], 5, [[0, 5, 10, 15]]),
    ("zero gap: touching joins", [(0, 5), (5, 6), (6.5, 7)], 0, [[0, 5], [6.5]]),
    ("unsorted input", [(15.5, 16), (0, 5)], 10, [[0], [15.5]]),
    ("an open event holds the item open", [(0, None), (500, 501)], 10, [[0, 500]]),
    ("nothing", [], 10, []),
]


@pytest.mark.parametrize("what, spans, gap_s, expected", GROUPING, ids=[row[0] for row in GROUPING])
def test_grouping(what, spans, gap_s, expected):
    items = group_events([event(start, end) for start, end in spans], gap_s, EVERYTHING)
    starts = [[float(eid.split("-")[0]) for eid in item.event_ids] for item in items]
    assert starts == [[float(s) for s in group] for group in expected]


def test_an_item_spans_its_events_and_lists_labels_and_zones_once():
    item, = group_events([event(0, 5, "person", zones=("door",)), event(2, 9, "car", zones=("drive", "door")),
                          event(3, 4, "person")], 10, EVERYTHING)
    assert (item.start_time, item.end_time, item.duration_s) == (0, 9, 9)
    assert item.labels == ("person", "car") and item.zones == ("door", "drive")
    assert item.id == item.event_ids[0] and item.camera_id == "cam1" and not item.reviewed


def test_an_item_with_an_open_event_has_no_end():
    item, = group_events([event(0, 5), event(3, None)], 10, EVERYTHING)
    assert item.end_time is None and item.duration_s is None


def test_events_of_two_cameras_are_refused_and_grouped_apart_by_camera():
    events = [event(0, 5, camera="a"), event(1, 6, camera="b", track=7)]
    with pytest.raises(ValueError, match="one camera"):
        group_events(events, 10, EVERYTHING)
    rules = {"a": AlertRule(labels=frozenset({"car"})), "b": EVERYTHING}
    items = group_by_camera(events, 10, rules.__getitem__)
    assert {cam: [(i.camera_id, i.severity) for i in found] for cam, found in items.items()} == {
        "a": [("a", DETECTION)], "b": [("b", ALERT)]}


def test_a_negative_gap_is_refused():
    with pytest.raises(ValueError):
        group_events([event(0, 1)], -1, EVERYTHING)


# (what, rule labels, rule zones, the item's events as (label, zones), severity)
SEVERITY = [
    ("both empty: every event is an alert", (), (), [("cat", ())], ALERT),
    ("by label", ("person",), (), [("car", ()), ("person", ())], ALERT),
    ("label not in the rule", ("person",), (), [("car", ()), ("dog", ())], DETECTION),
    ("by zone", (), ("door",), [("car", ("drive",)), ("cat", ("door",))], ALERT),
    ("zone not entered", (), ("door",), [("person", ("drive",))], DETECTION),
    ("no zone entered at all", (), ("door",), [("person", ())], DETECTION),
    ("label and zone in one event", ("person",), ("door",), [("person", ("door",))], ALERT),
    ("label and zone only in different events", ("person",), ("door",), [("person", ()), ("car", ("door",))], DETECTION),
]


@pytest.mark.parametrize("what, labels, zones, events, severity", SEVERITY, ids=[row[0] for row in SEVERITY])
def test_severity(what, labels, zones, events, severity):
    rule = AlertRule(frozenset(labels), frozenset(zones))
    item, = group_events([event(i, i + 1, label, zones=z, track=i) for i, (label, z) in enumerate(events)], 10, rule)
    assert item.severity == severity and item.is_alert == (severity == ALERT)
