"""An event's boxes over time (edge_app/events/tracks.py): kept while its object is tracked,
thinned to a bound, written with its end, read back and deleted with the event."""
from __future__ import annotations

import pytest

from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis
from edge_app.events.snapshots import SnapshotSettings
from edge_app.events.tracks import FIRST_STEP_S, MAX_TRACK_POINTS, EventTrack, TrackPoint, TrackRecorder
from tests.events.scene import FPS, HEIGHT, WIDTH, Obj, messages, moving, run
from tests.support.event_store import event, open_store  # noqa: F401  (open_store: a fixture)


def analysis():
    return CameraAnalysis("cam1", AnalysisSettings(snapshots=SnapshotSettings(enabled=False)))


def test_an_ended_event_comes_with_its_track_in_fractions_of_the_frame():
    last = 30
    results = run(analysis(), [Obj(0, moving(100, 100, 5), last=last)], 80)
    ended = messages(results, "end")
    tracks = [track for result in results for track in result.tracks]
    assert len(ended) == 1 and len(tracks) == 1
    track, ev = tracks[0], ended[0][1].after
    assert track.event_id == ev.id and track.start_time == ev.start_time
    # every other frame at 10 fps (a box at most every 0.2 s), moving right 5 px a frame
    assert [p.t_s for p in track.points[:3]] == pytest.approx([0.0, 0.2, 0.4])
    first, later = track.points[0].box, track.points[1].box
    assert first[0] == pytest.approx(100 / WIDTH, abs=0.02) and first[1] == pytest.approx(100 / HEIGHT, abs=0.02)
    assert later[0] - first[0] == pytest.approx(2 * 5 / WIDTH, abs=0.005), "it moved two frames' worth"
    assert all(0 <= v <= 1 for p in track.points for v in p.box)
    assert track.points[-1].t_s <= (last + 1) / FPS


@pytest.mark.parametrize("frames", [1, MAX_TRACK_POINTS - 1, MAX_TRACK_POINTS, 10 * MAX_TRACK_POINTS, 100 * MAX_TRACK_POINTS])
def test_a_long_track_is_thinned_evenly_to_a_bound(frames):
    recorder = TrackRecorder()
    for frame in range(frames):
        recorder.add(frame * FIRST_STEP_S, (10, 10, 20, 20), 100, 100)
    points = recorder.points
    assert 1 <= len(points) < MAX_TRACK_POINTS
    steps = {round(b.t_s - a.t_s, 2) for a, b in zip(points, points[1:])}
    assert len(steps) <= 1, f"uneven: {steps}"
    assert points[0].t_s == 0 and (frames - 1) * FIRST_STEP_S - points[-1].t_s <= recorder.step_s


def test_no_track_without_the_frame_size():
    recorder = TrackRecorder()
    recorder.add(0.0, (10, 10, 20, 20), 0, 0)
    assert recorder.points == []


def test_the_store_keeps_the_track_and_deletes_it_with_its_event(open_store):
    store = open_store()
    kept = EventTrack(event(1).id, event(1).start_time, (TrackPoint(0.0, (0.1, 0.2, 0.3, 0.4)), TrackPoint(0.2, (0.15, 0.2, 0.35, 0.4))))
    for ev in (event(1), event(2)):
        store.save_event(ev)
    store.save_track(kept)
    store.save_track(EventTrack(event(2).id, event(2).start_time, (TrackPoint(0.0, (0, 0, 1, 1)),)))
    assert store.flush()
    assert store.track(kept.event_id) == kept
    assert store.track("1.000-nowhere-1") is None
    assert store.delete(event(2).id) and store.track(event(2).id) is None
    # A late track of a deleted event does not come back.
    store.save_track(EventTrack(event(2).id, event(2).start_time, (TrackPoint(0.0, (0, 0, 1, 1)),)))
    assert store.flush() and store.track(event(2).id) is None
