"""The dwell arithmetic (edge_app.track.dwell), with times passed in, and the entry and exit times
the zone tracker reports for it."""
import numpy as np
import pytest

from edge_app.track import Zone, ZoneTracker
from edge_app.track.dwell import DwellClock, ZoneVisit

# A script is a list of steps: ("seen", t) the track is observed at t; ("enter"|"leave", zone, t);
# ("leave", zone, None) closes at the last sighting; ("end",) the track ended.
TRACK = 7


def play(script):
    clock = DwellClock()
    closed = []
    for step in script:
        if step[0] == "seen":
            clock.seen([TRACK], step[1])
        elif step[0] == "enter":
            clock.enter(step[1], TRACK, "person", step[2])
        elif step[0] == "leave":
            visit = clock.leave(step[1], TRACK, step[2])
            closed += [visit] if visit is not None else []
        elif step[0] == "end":
            closed += clock.end(TRACK)
    return clock, closed


@pytest.mark.parametrize("script, dwell_s", [
    # a visit runs from the entry to the last sighting
    ([("enter", "door", 10.0), ("seen", 12.5)], {"door": 2.5}),
    # closed at the first observation outside
    ([("enter", "door", 10.0), ("seen", 14.0), ("leave", "door", 14.5), ("seen", 20.0)], {"door": 4.5}),
    # two visits to one zone add up; a second zone is its own
    ([("enter", "door", 0.0), ("leave", "door", 3.0), ("enter", "door", 10.0), ("seen", 11.0),
      ("enter", "hall", 11.0), ("seen", 15.0)], {"door": 3.0 + 5.0, "hall": 4.0}),
    # unseen for a while (occluded), then seen again inside: the gap counts once it is seen again
    ([("enter", "door", 0.0), ("seen", 1.0), ("seen", 4.0)], {"door": 4.0}),
    # unseen since 1.0: the open visit does not grow while nobody sees the object
    ([("enter", "door", 0.0), ("seen", 1.0)], {"door": 1.0}),
    # a frame stamped before the entry (clock jitter) never makes a negative dwell
    ([("enter", "door", 5.0), ("seen", 4.9)], {"door": 0.0}),
    # an entry already open is not restarted
    ([("enter", "door", 0.0), ("enter", "door", 3.0), ("seen", 5.0)], {"door": 5.0}),
    # never entered: no dwell
    ([("seen", 3.0)], {}),
])
def test_dwell_per_zone(script, dwell_s):
    clock, _ = play(script)
    assert clock.dwell_s(TRACK) == pytest.approx(dwell_s)


@pytest.mark.parametrize("script, visits", [
    # a track that ends closes its visits when it was last seen, not when the tracker gave up on it
    ([("enter", "door", 0.0), ("seen", 2.0), ("end",)], [("door", 0.0, 2.0, 2.0)]),
    # a leave without a time (the zone tracker forgetting an ended track) closes at the last sighting
    ([("enter", "door", 1.0), ("seen", 3.5), ("leave", "door", None)], [("door", 1.0, 2.5, 3.5)]),
    ([("enter", "door", 1.0), ("leave", "door", 2.0), ("leave", "door", 3.0)], [("door", 1.0, 1.0, 2.0)]),
    ([("leave", "door", 3.0)], []),
])
def test_closed_visits(script, visits):
    _, closed = play(script)
    assert [(v.zone, v.entered_s, v.dwell_s, v.left_s) for v in closed] == [pytest.approx(v) for v in visits]
    assert all(not v.open for v in closed)


def test_an_ended_track_is_forgotten_and_open_visits_are_listed_oldest_first():
    clock = DwellClock()
    clock.enter("door", 1, "person", 5.0)
    clock.enter("door", 2, "car", 3.0)
    clock.seen([1, 2, -1], 9.0)
    assert clock.open_visits() == [ZoneVisit("door", 2, "car", 3.0, 6.0), ZoneVisit("door", 1, "person", 5.0, 4.0)]
    clock.end(2)
    assert clock.dwell_s(2) == {} and len(clock) == 1
    assert [(v.track_id, v.dwell_s) for v in clock.close_all()] == [(1, 4.0)]
    assert clock.dwell_s(1) == {"door": 4.0}  # readable until cleared
    clock.clear()
    assert clock.dwell_s(1) == {} and clock.open_visits() == []


SQUARE = Zone("sq", ((0.2, 0.2), (0.8, 0.2), (0.8, 0.8), (0.2, 0.8)))
IN, OUT = (0.5, 0.5), (0.9, 0.9)


@pytest.mark.parametrize("min_frames, path, times, expected", [
    # entry settled on the third frame inside, timed at the first; exit likewise
    (3, [OUT, IN, IN, IN, IN, OUT, OUT, OUT], [0, 1, 2, 3, 4, 5, 6, 7], [("enter", 1.0), ("leave", 5.0)]),
    # a new track seen first inside enters at that first sighting
    (3, [IN, IN, IN], [10, 11, 12], [("enter", 10.0)]),
    (1, [IN, OUT], [4, 6], [("enter", 4.0), ("leave", 6.0)]),
])
def test_zone_changes_carry_the_time_the_border_was_crossed(min_frames, path, times, expected):
    zones = ZoneTracker([SQUARE], min_frames=min_frames, min_span_s=100.0)
    changes = []
    for point, t in zip(path, times):
        changes += zones.update([3], ["person"], np.array([point]), float(t))
    assert [(c.change, c.at_s) for c in changes] == expected
    assert [c.at_s for c in zones.forget([3])] in ([], [None])


@pytest.mark.parametrize("limits_s, skip, expected", [
    ({"door": 2.0}, (), [("door", 2), ("door", 1)]),       # oldest entry first
    ({"door": 4.5}, (), [("door", 2)]),
    ({"door": 2.0}, {("door", 2)}, [("door", 1)]),         # already flagged
    ({"hall": 1.0}, (), [("hall", 1)]),
    ({}, (), []),                                          # zones without a limit never
])
def test_open_visits_past_a_limit(limits_s, skip, expected):
    clock = DwellClock()
    clock.enter("door", 2, "person", 0.0)
    clock.enter("door", 1, "person", 3.0)
    clock.enter("hall", 1, "person", 4.0)
    clock.seen([1, 2], 6.0)
    assert [(v.zone, v.track_id) for v in clock.open_longer_than(limits_s, skip)] == expected
