"""A zone's events through CameraAnalysis (synthetic detections, 10 frames a second): the
occupancy event while a zone holds more than its max_objects, and the snapshot a loitering or
occupancy event gets when it begins; then an occupancy event stored and read back."""
from dataclasses import replace

import cv2
import numpy as np
import pytest

from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis, ZoneRules
from edge_app.events.model import LOITERING, OCCUPANCY, Occupancy
from edge_app.events.occupancy import NO_TRACK
from edge_app.events.snapshots import SnapshotSettings
from edge_app.track import Zone
from tests.events.scene import Obj, frame_time, messages, run, still
from tests.support.event_store import open_store  # noqa: F401  (a fixture)

LEFT = Zone("left", ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)), frozenset({"person"}))
PERSON, OTHER, OUTSIDE = still(100, 100), still(200, 300), still(500, 100)


def analysis(rules, snapshots=True, events=True):
    settings = AnalysisSettings(events_enabled=events, min_frames=3, end_after_s=2.0,
                                snapshots=SnapshotSettings(enabled=snapshots))
    return CameraAnalysis("cam1", settings, zones=(LEFT,), rules=rules)


def of_type(results, type_, kind=None):
    return [(i, m) for i, m in messages(results, kind) if m.after.type == type_]


def over_capacity_frames(results):
    """The frames in which the zone's figures said it went over its limit and back."""
    changes = [(i, r.zone_stats["left"].over_capacity) for i, r in enumerate(results) if "left" in r.zone_stats]
    return [i for (i, over), (_, was) in zip(changes, [(None, False)] + changes) if over != was]


def test_an_occupancy_event_is_open_exactly_while_the_zone_is_over_capacity():
    crowd = [Obj(0, PERSON, last=59), Obj(0, OTHER, first=10, last=29), Obj(0, OUTSIDE, last=59), Obj(2, PERSON)]
    results = run(analysis(ZoneRules(max_objects={"left": 1})), crowd, 80)
    occupancy = of_type(results, OCCUPANCY)
    assert [m.type for _, m in occupancy] == ["new", "end"]
    (new_at, new), (end_at, end) = occupancy
    assert [new_at, end_at] == over_capacity_frames(results)
    # the second person counts from the frame that confirmed it inside, until its track ended
    # events.end_after_s after it was last seen (frame 29); the car and the person outside never
    assert new_at > 10 and end_at > 29 + 19
    event = new.after
    assert (event.type, event.label, event.track_id, event.current_zones) == (OCCUPANCY, "person", NO_TRACK, ("left",))
    assert event.occupancy == Occupancy({"person": 2}, 2, 1) and event.start_time == pytest.approx(frame_time(new_at))
    assert event.box == (100, 100, 260, 420)  # around the two people inside
    assert end.after.id == event.id and end.after.end_time == pytest.approx(frame_time(end_at))
    assert end.after.occupancy == Occupancy({"person": 1}, 2, 1) and end.after.current_zones == ()


def test_a_new_peak_updates_the_event():
    third = still(20, 200)
    crowd = [Obj(0, PERSON, last=49), Obj(0, OTHER, first=10, last=49), Obj(0, third, first=20, last=49)]
    results = run(analysis(ZoneRules(max_objects={"left": 1})), crowd, 80)
    occupancy = [(m.type, m.after.occupancy.count, m.after.occupancy.peak_objects) for _, m in of_type(results, OCCUPANCY)]
    assert occupancy == [("new", 2, 2), ("update", 3, 3), ("end", 0, 3)]
    (_, update), = of_type(results, OCCUPANCY, "update")
    assert update.before == of_type(results, OCCUPANCY, "new")[0][1].after


@pytest.mark.parametrize("events, rules, made", [
    (True, ZoneRules(max_objects={"left": 1}), True),
    (False, ZoneRules(max_objects={"left": 1}), False),    # events switched off: the zone's figures only
    (True, ZoneRules(max_objects={"left": 2}), False),     # two inside is not over two
    (True, ZoneRules(loitering_s={"left": 1.0}), False),   # no max_objects
])
def test_occupancy_events_only_with_a_limit_exceeded_and_events_on(events, rules, made):
    results = run(analysis(rules, events=events), [Obj(0, PERSON, last=29), Obj(0, OTHER, last=29)], 60)
    assert bool(of_type(results, OCCUPANCY)) == made


def test_ending_the_analysis_ends_the_occupancy_event():
    a = analysis(ZoneRules(max_objects={"left": 0}))
    results = run(a, [Obj(0, PERSON)], 20)
    (_, new), = of_type(results, OCCUPANCY)
    final = a.end_all(frame_time(20))
    (end,) = [m for m in final.events if m.after.type == OCCUPANCY]
    assert (end.type, end.after.id, end.after.end_time, end.after.occupancy.count) == ("end", new.after.id, frame_time(20), 0)
    assert a.occupancy.open_events() == []


def boxed(jpeg: bytes, box) -> bool:
    """The left edge of ``box`` is drawn on the (black) frame."""
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    x1, y1, _, y2 = box
    return int(image[int(y1 + y2) // 2, int(x1)].max()) > 80


@pytest.mark.parametrize("rules, type_, boxes, not_boxed", [
    # the loitering person alone; everyone inside the crowded zone, not the person outside
    (ZoneRules(loitering_s={"left": 1.0}), LOITERING, [PERSON(0)], [OTHER(0)]),
    (ZoneRules(max_objects={"left": 1}), OCCUPANCY, [PERSON(0), OTHER(0)], [OUTSIDE(0)]),
])
def test_a_zone_event_gets_a_snapshot_of_its_objects_when_it_begins(rules, type_, boxes, not_boxed):
    crowd = [Obj(0, PERSON, last=49), Obj(0, OTHER, first=5, last=49), Obj(0, OUTSIDE, last=49)]
    results = run(analysis(rules), crowd, 80)
    frame, new = of_type(results, type_, "new")[0]  # (the other person loiters later)
    assert new.after.has_snapshot
    (snapshot,) = [s for s in results[frame].snapshots if s.event_id == new.after.id]
    assert all(boxed(snapshot.jpeg, box) for box in boxes) and not any(boxed(snapshot.jpeg, box) for box in not_boxed)
    assert all(s.event_id != new.after.id for r in results for s in r.label_snapshots.values())
    assert sum(s.event_id == new.after.id for r in results for s in r.snapshots) == 1
    (end,) = [m for _, m in of_type(results, type_, "end") if m.after.id == new.after.id]
    assert end.after.has_snapshot


@pytest.mark.parametrize("snapshots, with_image", [(False, True), (True, False)])
def test_no_zone_snapshot_without_snapshots_or_a_frame(snapshots, with_image):
    a = analysis(ZoneRules(loitering_s={"left": 1.0}, max_objects={"left": 0}), snapshots=snapshots)
    results = run(a, [Obj(0, PERSON, last=29)], 60, with_image=with_image)
    zone_events = of_type(results, OCCUPANCY, "new") + of_type(results, LOITERING, "new")
    assert len(zone_events) == 2 and not any(m.after.has_snapshot for _, m in zone_events)
    assert not any(r.snapshots for r in results)


def test_an_occupancy_event_is_stored_and_read_back_with_its_snapshot(open_store):
    store = open_store()
    results = run(analysis(ZoneRules(max_objects={"left": 1})), [Obj(0, PERSON, last=29), Obj(0, OTHER, last=29)], 60)
    for result in results:  # as the appliance does: each message's event, then the frame's snapshots
        for message in result.events:
            store.save_event(message.after)
        for snapshot in result.snapshots:
            store.save_snapshot(snapshot)
    assert store.flush()
    (_, end), = of_type(results, OCCUPANCY, "end")
    stored = store.get(end.after.id)
    assert stored == end.after and stored.occupancy == Occupancy({}, 2, 1) and stored.type == OCCUPANCY
    assert store.snapshot(end.after.id)[:2] == b"\xff\xd8"
    from edge_app.events.query import EventQuery
    assert [e.id for e in store.events(EventQuery(zone="left")) if e.type == OCCUPANCY] == [end.after.id]


def test_a_database_from_before_occupancy_events_is_migrated_and_its_rows_read(tmp_path):
    from edge_app.events.database import LATEST_VERSION, EventDatabase, query_events, read_connection
    from edge_app.events.query import EventQuery
    from tests.events.old_schema import database_at

    conn = database_at(tmp_path, 7)
    conn.execute("INSERT INTO events (id, camera_id, label, track_id, score, top_score, box, frame_time, start_time, "
                 "end_time, current_zones, entered_zones, type) VALUES ('old', 'gate', 'person', 1, 0.5, 0.6, "
                 "'[1,2,3,4]', 2, 1, 3, '[]', '[\"left\"]', 'loitering')")
    conn.commit()
    conn.close()
    results = run(analysis(ZoneRules(max_objects={"left": 0})), [Obj(0, PERSON, last=9)], 40)
    (_, end), = of_type(results, OCCUPANCY, "end")
    database = EventDatabase(tmp_path)
    database.begin()
    database.upsert(end.after)
    database.commit()
    database.close()
    reader = read_connection(tmp_path)
    events = {e.id: e for e in query_events(reader, EventQuery())}
    assert (events["old"].type, events["old"].occupancy) == (LOITERING, None)
    # (has_snapshot is whether the database holds one: none was saved here)
    assert events[end.after.id] == replace(end.after, has_snapshot=False)
    assert events[end.after.id].occupancy == Occupancy({}, 1, 0)
    assert reader.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == LATEST_VERSION == 8
    reader.close()
