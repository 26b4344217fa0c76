"""Dwell on events, loitering events and zone figures of one camera (docs/analytics.md, "Dwell and
loitering"), through CameraAnalysis with synthetic detections at 10 frames a second."""
import pytest

from edge_app.config.file import parse_config
from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis, ZoneRules
from edge_app.events.model import LOITERING, OBJECT
from edge_app.track import Zone
from tests.events.scene import Obj, frame_time, messages, run, still

LEFT = Zone("left", ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)), frozenset({"person"}))
# a person standing in the left half (bottom centre x = 130 of 640), another further right in it
PERSON, OTHER = still(100, 100), still(200, 300)
OUTSIDE = still(500, 100)


def analysis(rules=ZoneRules(), zones=(LEFT,), end_after_s=2.0):
    return CameraAnalysis("cam1", AnalysisSettings(min_frames=3, end_after_s=end_after_s), zones=zones, rules=rules)


def seconds(frame: int) -> float:
    return frame_time(frame) - frame_time(0)


def objects(results, kind=None, type_=OBJECT):
    return [(i, m) for i, m in messages(results, kind) if m.after.type == type_]


def test_events_carry_the_dwell_of_each_zone_on_updates_and_at_the_end():
    results = run(analysis(), [Obj(0, PERSON, last=49)], 80)
    (_, entered), = objects(results, "update")
    assert entered.after.current_zones == ("left",) and "left" in entered.after.dwell_s
    (_, end), = objects(results, "end")
    # in the zone from its first frame with a track id (frame 1) to its last sighting (frame 49)
    assert end.after.dwell_s == {"left": pytest.approx(seconds(49) - seconds(1), abs=1e-6)}
    assert end.after.to_dict()["dwell_s"] == {"left": 4.8}


def test_an_object_outside_every_zone_has_no_dwell():
    results = run(analysis(), [Obj(0, OUTSIDE, last=29)], 60)
    (_, end), = objects(results, "end")
    assert end.after.dwell_s == {}


@pytest.mark.parametrize("hidden, events, dwell_s", [
    # hidden 1.5 s (under events.end_after_s, the tracker's lost timeout): one event, the gap counted
    ((30, 44), 1, [seconds(69) - seconds(1)]),
    # hidden 3 s: the track ended at its last sighting, a new one starts afresh
    ((30, 59), 2, [seconds(29) - seconds(1), seconds(84) - seconds(61)]),
])
def test_a_track_lost_briefly_keeps_its_dwell(hidden, events, dwell_s):
    first_hidden, last_hidden = hidden
    person = [Obj(0, PERSON, last=first_hidden - 1), Obj(0, PERSON, first=last_hidden + 1, last=last_hidden + 25)]
    results = run(analysis(), person, last_hidden + 60)
    ends = [m.after for _, m in objects(results, "end")]
    assert len(ends) == events == len({e.id for _, e in objects(results, "new") for e in [e.after]})
    assert [e.dwell_s["left"] for e in ends] == pytest.approx(dwell_s, abs=1e-6)


def test_loitering_event_past_loitering_s_once_per_visit():
    rules = ZoneRules(loitering_s={"left": 2.0})
    results = run(analysis(rules), [Obj(0, PERSON, last=49)], 80)
    (frame, new), = objects(results, "new", LOITERING)
    # entered at frame 1: 2.0 s of dwell are reached in frame 21
    assert frame == 21 and new.before is None
    loiter = new.after
    assert (loiter.type, loiter.label, loiter.camera_id, loiter.current_zones) == (LOITERING, "person", "cam1", ("left",))
    assert loiter.start_time == pytest.approx(frame_time(1)) and loiter.dwell_s["left"] >= 2.0
    assert "loitering" in loiter.id and loiter.id != objects(results, "new")[0][1].after.id
    (_, end), = objects(results, "end", LOITERING)
    assert end.before == loiter and end.after.id == loiter.id
    assert end.after.end_time == pytest.approx(frame_time(49))
    assert end.after.dwell_s == {"left": pytest.approx(seconds(49) - seconds(1), abs=1e-6)}
    assert end.after.current_zones == ()


@pytest.mark.parametrize("obj, loiters", [
    (Obj(0, PERSON, last=15), False),           # gone before 2 s: no loitering
    (Obj(2, PERSON, last=49), False),           # a car: the zone counts people only
    (Obj(0, OUTSIDE, last=49), False),          # standing outside the zone
    (Obj(0, PERSON, last=49), True),
])
def test_only_the_zones_labels_loiter_and_only_past_the_limit(obj, loiters):
    results = run(analysis(ZoneRules(loitering_s={"left": 2.0})), [obj], 80)
    assert bool(objects(results, "new", LOITERING)) == loiters
    assert len(objects(results, "end", LOITERING)) == len(objects(results, "new", LOITERING))


def test_zone_figures_occupancy_alert_and_mean_dwell():
    a = analysis(ZoneRules(loitering_s={"left": 2.0}, max_objects={"left": 1}))
    crowd = [Obj(0, PERSON, last=29), Obj(0, OTHER, first=10, last=39)]
    results = run(a, crowd, 80)
    changes = [(i, r.zone_stats["left"]) for i, r in enumerate(results) if "left" in r.zone_stats]
    assert changes[0][1].occupancy == 0 and changes[0][1].max_objects == 1
    assert max(s.occupancy for _, s in changes) == 2
    over = [i for i, s in changes if s.over_capacity]
    assert over and all(next(s for j, s in changes if j == i).occupancy == 2 for i in over)
    assert any(s.loitering == 2 for _, s in changes)
    final = a.counts().zone_stats["left"]
    assert (final.occupancy, final.loitering, final.over_capacity, final.visits_last_hour) == (0, 0, False, 2)
    # visits: frame 1 to 29 and frame 11 to 39, 2.8 s each
    assert final.mean_dwell_s == pytest.approx(2.8)


def test_the_mean_dwell_forgets_visits_older_than_an_hour():
    a = analysis()
    run(a, [Obj(0, PERSON, last=29)], 60)
    assert a.counts().zone_stats["left"].mean_dwell_s == pytest.approx(2.8)
    later = a.tick(frame_time(60) + 3600.0)
    assert later.zone_stats["left"].mean_dwell_s is None and later.zone_stats["left"].visits_last_hour == 0


def test_ending_the_analysis_ends_loitering_and_closes_visits():
    a = analysis(ZoneRules(loitering_s={"left": 1.0}))
    run(a, [Obj(0, PERSON)], 30)
    final = a.end_all(frame_time(30))
    loitering_ends = [m for m in final.events if m.after.type == LOITERING]
    assert [m.type for m in loitering_ends] == ["end"]
    assert loitering_ends[0].after.dwell_s["left"] == pytest.approx(seconds(29) - seconds(1), abs=1e-6)
    (object_end,) = [m for m in final.events if m.after.type == OBJECT]
    assert object_end.after.dwell_s["left"] == pytest.approx(seconds(29) - seconds(1), abs=1e-6)
    assert final.zone_stats["left"].occupancy == 0 and final.zone_stats["left"].loitering == 0
    assert len(a.dwell) == 0


def test_rules_come_from_the_zone_configuration():
    config = parse_config({"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s", "zones": [
        {"name": "a", "polygon": [[0, 0], [1, 0], [1, 1]], "labels": ["person"], "loitering_s": 12},
        {"name": "b", "polygon": [[0, 0], [1, 0], [1, 1]], "max_objects": 3}]}]})
    a = CameraAnalysis.from_config(config.cameras[0], config.events)
    assert a.loitering.limits_s == {"a": 12.0}
    assert a.counts().zone_stats == {}  # nothing reported before the first frame
    stats = a.tick(frame_time(0)).zone_stats
    assert (stats["a"].max_objects, stats["b"].max_objects) == (None, 3)
