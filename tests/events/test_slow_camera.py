"""A camera analysed about once a second, as on a busy device, with the appliance's idle ticks between its frames.

The appliance's stats thread calls ``tick(now)`` on a camera that has sent nothing for a second
(so that the objects of a camera that went quiet still leave). A camera analysed once a second
with half a second from capture to analysis is "idle" that long between any two of its frames,
and the tick's ``now`` (the wall clock) is later than the capture stamp of the frame analysed
next. A tick is not a frame: it must age tracks (end those unseen for ``end_after_s``) and
nothing else, or the objects of a slow camera lose their tracks and their events.
"""
import pytest

from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis
from edge_app.events.snapshots import SnapshotSettings
from tests.events.scene import WIDTH, HEIGHT, Obj, detections_at, frame_time, image, moving

LATENCY_S = 0.6            # capture to analysis on a busy device
TICK_AFTER_IDLE_S = 1.3    # the stats thread wakes once a second: some time past the 1 s of idleness


def walkers():
    # two people side by side, overlapping a little, walking right at a quarter of their height a second
    return [Obj(0, moving(60, 200, 6.0, w=80, h=240)), Obj(0, moving(125, 210, 6.0, w=70, h=220))]


def analyse(every_frames: int, ticks: bool):
    analysis = CameraAnalysis("cam1", AnalysisSettings(snapshots=SnapshotSettings(enabled=False)))
    objects, results, ids = walkers(), [], {0: [], 1: []}
    frames = list(range(0, 60, every_frames))
    for i, f in enumerate(frames):
        if ticks and i > 0:
            now = frame_time(frames[i - 1]) + TICK_AFTER_IDLE_S
            assert now < frame_time(f) + LATENCY_S and analysis.idle_s(now) >= 1.0  # as the appliance sees it
            results.append(analysis.tick(now))
        dets = detections_at(objects, f)
        result = analysis.process(f, frame_time(f), image(), dets, (WIDTH, HEIGHT))
        results.append(result)
        for k, track_id in enumerate(result.detections.track_id.tolist()):
            ids[k].append(track_id)
    return results, ids


@pytest.mark.parametrize("every_frames", [10, 12, 15])   # 1, 0.8 and 0.67 frames a second
@pytest.mark.parametrize("ticks", [False, True])
def test_a_slow_camera_keeps_its_tracks_and_events_through_idle_ticks(every_frames, ticks):
    results, ids = analyse(every_frames, ticks)
    for person, seen in ids.items():
        assert seen[0] == -1 and len(set(seen[1:])) == 1 and seen[1] >= 0, (person, ids)
    assert ids[0][1] != ids[1][1]
    new = [m.after for r in results for m in r.events if m.type == "new"]
    assert sorted(e.track_id for e in new) == sorted({ids[0][1], ids[1][1]})
    assert all(e.start_time == frame_time(every_frames) for e in new)   # the second sighting gives the id
    assert not [m for r in results for m in r.events if m.type == "end"]


def test_a_tick_still_ends_the_events_of_a_camera_gone_quiet():
    analysis = CameraAnalysis("cam1", AnalysisSettings(end_after_s=2.0, snapshots=SnapshotSettings(enabled=False)))
    for f in range(0, 40, 10):
        analysis.process(f, frame_time(f), image(), detections_at(walkers(), f), (WIDTH, HEIGHT))
    assert analysis.tick(frame_time(30) + 1.5).events == []
    ended = analysis.tick(frame_time(30) + 2.5).events
    assert sorted(m.type for m in ended) == ["end", "end"] and all(m.after.end_time == frame_time(30) for m in ended)
    assert analysis.counts().objects == {"person": 0}
