"""Event lifecycle of a camera (docs/mqtt.md, "The event object"): new after min_frames, rate-limited updates, end."""
import pytest

from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis
from edge_app.events.snapshots import SnapshotSettings
from edge_app.track import Zone
from tests.events.scene import FPS, Obj, frame_time, messages, moving, run, still

NO_SNAPSHOTS = SnapshotSettings(enabled=False)


def analysis(**settings):
    zones = settings.pop("zones", ())
    settings.setdefault("snapshots", NO_SNAPSHOTS)
    return CameraAnalysis("cam1", AnalysisSettings(**settings), zones=zones)


@pytest.mark.parametrize("min_frames", [1, 2, 3, 5, 8])
def test_an_object_becomes_one_event_after_min_frames(min_frames):
    results = run(analysis(min_frames=min_frames), [Obj(0, still(100, 100))], 20)
    new = messages(results, "new")
    assert [i for i, _ in new] == [max(min_frames, 2) - 1]  # the tracker itself needs 2 sightings for an id
    event = new[0][1].after
    assert new[0][1].before is None
    assert event.label == "person" and event.camera_id == "cam1" and event.end_time is None
    assert event.start_time == frame_time(1) and event.frame_time == frame_time(new[0][0])
    assert event.id.endswith(f"-cam1-{event.track_id}")
    assert len(messages(results, "end")) == 0


def test_an_object_seen_fewer_than_min_frames_makes_no_event():
    results = run(analysis(min_frames=5), [Obj(0, still(100, 100), last=3)], 40)
    assert messages(results) == []


@pytest.mark.parametrize("end_after_s", [0.5, 1.0, 2.0, 3.5])
def test_an_event_ends_after_end_after_s_without_its_object(end_after_s):
    last = 9
    results = run(analysis(end_after_s=end_after_s), [Obj(0, still(100, 100), last=last)], 60)
    ends = messages(results, "end")
    assert len(ends) == 1 and len(messages(results, "new")) == 1
    index, end = ends[0]
    gone_s = frame_time(index) - frame_time(last)
    assert end_after_s < gone_s <= end_after_s + 1 / FPS + 1e-9
    assert end.after.end_time == frame_time(last)
    assert end.before.id == end.after.id and end.before.end_time is None


def test_a_short_gap_keeps_the_event():
    # Missing for 1 s with end_after_s 2 s: same track, same event, no end.
    obj = Obj(0, still(100, 100))
    a = analysis(end_after_s=2.0)
    first = run(a, [obj], 10)
    gap = run(a, [], 10, start=10)
    back = run(a, [obj], 10, start=20)
    results = first + gap + back
    assert len(messages(results, "new")) == 1 and messages(results, "end") == []


@pytest.mark.parametrize("interval_s", [0.5, 1.0, 2.0])
def test_updates_on_a_new_top_score_come_at_most_once_per_interval(interval_s):
    rising = Obj(0, still(100, 100), score=lambda f: min(0.99, 0.6 + 0.01 * f))
    results = run(analysis(update_interval_s=interval_s), [rising], 50)
    sent = messages(results)
    times = [frame_time(i) for i, _ in sent]
    assert [m.type for _, m in sent][0] == "new" and all(m.type == "update" for _, m in sent[1:])
    assert all(b - a >= interval_s - 1e-9 for a, b in zip(times, times[1:]))
    assert len(sent) - 1 >= int((frame_time(49) - times[0]) / interval_s) - 1
    # Each update continues from what subscribers saw last.
    for (_, previous), (_, message) in zip(sent, sent[1:]):
        assert message.before == previous.after
        assert message.after.top_score > message.before.top_score


def test_a_steady_object_sends_no_updates():
    results = run(analysis(), [Obj(0, moving(100, 100, 2.0), score=lambda f: 0.8)], 50)
    assert [m.type for _, m in messages(results)] == ["new"]


def test_a_top_score_change_waiting_for_the_interval_is_sent_later():
    # One better frame right after "new": the update waits for the interval, then goes out.
    obj = Obj(0, still(100, 100), score=lambda f: 0.95 if f == 3 else 0.7)
    results = run(analysis(), [obj], 30)
    sent = messages(results)
    assert [m.type for _, m in sent] == ["new", "update"]
    assert frame_time(sent[1][0]) - frame_time(sent[0][0]) == pytest.approx(1.0)
    assert sent[1][1].after.top_score == pytest.approx(0.95) and sent[1][1].after.score == pytest.approx(0.7)


DRIVEWAY = Zone("driveway", ((0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (0.5, 1.0)))


def test_zone_entered_and_left_are_updates():
    # Walks right across the middle (x = 320 px) and back out of the zone later.
    walker = Obj(0, lambda f: (100 + 20 * f, 200, 160 + 20 * f, 320) if f < 20 else (500 - 20 * (f - 20), 200, 560 - 20 * (f - 20), 320))
    results = run(analysis(zones=[DRIVEWAY]), [walker], 40)
    updates = [m.after for _, m in messages(results, "update")]
    zones_seen = [(e.current_zones, e.entered_zones) for e in updates]
    assert (("driveway",), ("driveway",)) in zones_seen
    assert zones_seen[-1] == ((), ("driveway",))
    new = messages(results, "new")[0][1].after
    assert new.current_zones == () and new.entered_zones == ()


def test_zone_labels_filter_who_enters():
    cars_only = Zone("lot", ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)), frozenset({"car"}))
    results = run(analysis(zones=[cars_only]), [Obj(0, still(100, 100)), Obj(2, still(400, 100))], 20)
    events = {m.after.label: m.after for _, m in messages(results)}
    assert events["person"].entered_zones == () and events["car"].entered_zones == ("lot",)


@pytest.mark.parametrize("labels, expected", [
    (frozenset(), {"person", "car"}),
    (frozenset({"car"}), {"car"}),
    (frozenset({"dog"}), set()),
])
def test_only_event_labels_make_events(labels, expected):
    results = run(analysis(event_labels=labels), [Obj(0, still(100, 100)), Obj(2, still(400, 100))], 20)
    assert {m.after.label for _, m in messages(results, "new")} == expected


def test_events_disabled_makes_no_events_but_counts_objects():
    results = run(analysis(events_enabled=False), [Obj(0, still(100, 100), last=5)], 40)
    assert messages(results) == []
    assert results[1].object_counts == {"person": 1}


def test_end_all_ends_open_events_at_shutdown():
    a = analysis()
    run(a, [Obj(0, still(100, 100)), Obj(2, still(400, 100)), Obj(0, still(300, 300), first=8)], 10)
    assert len(a.open_events()) == 2  # the late person is not an event yet
    final = a.end_all(frame_time(10))
    ended = final.events
    assert sorted(m.after.label for m in ended) == ["car", "person"]
    assert all(m.type == "end" and m.after.end_time == frame_time(10) and m.before.end_time is None for m in ended)
    assert final.object_counts == {"person": 0, "car": 0}
    assert a.open_events() == [] and a.end_all(frame_time(11)).events == []


def test_after_end_all_the_same_object_is_a_new_event():
    a = analysis()
    obj = Obj(0, still(100, 100))
    first = messages(run(a, [obj], 10), "new")[0][1].after
    a.end_all(frame_time(10))
    second = messages(run(a, [obj], 10, start=11), "new")[0][1].after
    assert second.track_id != first.track_id and second.id != first.id
    assert a.counts().objects == {"person": 1}


def test_tick_ends_events_of_a_camera_without_frames():
    a = analysis(end_after_s=1.0)
    run(a, [Obj(0, still(100, 100))], 5)
    assert a.tick(frame_time(5) + 0.5).events == []
    ended = a.tick(frame_time(5) + 1.5).events
    assert [m.type for m in ended] == ["end"] and ended[0].after.end_time == frame_time(4)


def test_ids_are_unique_across_a_restart():
    first = run(analysis(), [Obj(0, still(100, 100))], 5)
    second = run(analysis(), [Obj(0, still(100, 100))], 5, start=100)
    assert messages(first, "new")[0][1].after.id != messages(second, "new")[0][1].after.id
