"""Snapshots, object/zone counts and tripwire counts of a camera (docs/mqtt.md)."""
import cv2
import numpy as np
import pytest

from edge_app.detect.annotate import class_color
from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis
from edge_app.events.counts import LineCounts, LineTotals
from edge_app.events.snapshots import SnapshotSettings
from edge_app.track import Line, Zone
from edge_app.track.lines import LineCrossing
from tests.events.scene import HEIGHT, WIDTH, Obj, detections_at, frame_time, messages, moving, run, still


def analysis(snapshots=SnapshotSettings(), zones=(), lines=(), line_seed=None, **settings):
    return CameraAnalysis("cam1", AnalysisSettings(snapshots=snapshots, **settings), zones=zones, lines=lines, line_seed=line_seed)


def snapshots_of(results):
    return [(i, s) for i, r in enumerate(results) for s in r.snapshots]


# --------------------------------------------------------------------------- snapshots
@pytest.mark.parametrize("scores, expected_frames", [
    # constant: one snapshot, when the event starts
    ([0.8] * 30, [2]),
    # a better frame soon after the first snapshot waits for the interval, a later better one is taken
    ([0.6, 0.6, 0.6, 0.9] + [0.6] * 26, [2]),
    ([0.6] * 15 + [0.9] + [0.6] * 14, [2, 15]),
    # rising slowly: at most one a second, each better than the last by min_gain
    ([min(0.99, 0.6 + 0.01 * f) for f in range(40)], [2, 12, 22, 32]),
    # a slightly better frame (under min_gain) is not worth an encode
    ([0.8] * 15 + [0.81] + [0.8] * 14, [2]),
])
def test_snapshot_choice(scores, expected_frames):
    results = run(analysis(min_frames=3), [Obj(0, still(100, 100), score=lambda f: scores[f])], len(scores))
    taken = snapshots_of(results)
    assert [i for i, _ in taken] == expected_frames
    assert [s.score for _, s in taken] == pytest.approx([scores[i] for i in expected_frames])
    assert all(a.score < b.score for (_, a), (_, b) in zip(taken, taken[1:]))


def test_snapshot_is_the_frame_with_the_objects_box_drawn():
    results = run(analysis(), [Obj(0, still(100, 100, 200, 200)), Obj(2, still(400, 300, 100, 100), first=20)], 5)
    (index, snap), = snapshots_of(results)
    picture = cv2.imdecode(np.frombuffer(snap.jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (HEIGHT, WIDTH, 3)
    event = messages(results, "new")[0][1].after
    assert (snap.event_id, snap.camera_id, snap.label, snap.frame_time) == (event.id, "cam1", "person", frame_time(index))
    # The box edge has the class colour; inside and far away stays black.
    edge = picture[200, 100].astype(int)
    assert np.abs(edge - np.array(class_color(0))).max() < 60
    assert picture[200, 200].max() < 30 and picture[450, 600].max() < 30


def test_the_event_says_it_has_a_snapshot_from_the_start():
    results = run(analysis(), [Obj(0, still(100, 100))], 5)
    assert messages(results, "new")[0][1].after.has_snapshot is True
    results = run(analysis(snapshots=SnapshotSettings(enabled=False)), [Obj(0, still(100, 100))], 5)
    assert messages(results, "new")[0][1].after.has_snapshot is False and snapshots_of(results) == []


def test_a_better_snapshot_is_an_update():
    scores = [0.6] * 15 + [0.9] + [0.9] * 10
    results = run(analysis(), [Obj(0, still(100, 100), score=lambda f: scores[f])], len(scores))
    updates = messages(results, "update")
    assert [i for i, _ in updates] == [15] and updates[0][1].after.top_score == pytest.approx(0.9)


def test_encodes_per_frame_are_bounded_whatever_the_number_of_events():
    crowd = [Obj(0, still(20 + 60 * k, 100, 40, 80)) for k in range(10)]
    results = run(analysis(), crowd, 20)
    per_frame = [len(r.snapshots) for r in results]
    assert max(per_frame) == 1
    assert len({s.event_id for _, s in snapshots_of(results)}) == 10  # everyone gets one, one frame after another


def test_no_image_no_snapshot():
    results = run(analysis(), [Obj(0, still(100, 100))], 5, with_image=False)
    assert snapshots_of(results) == [] and messages(results, "new")[0][1].after.has_snapshot is False


def test_nv12_frames_are_converted_only_for_the_snapshots_taken():
    """Frames from a hardware decoder are NV12 (on the GPU, downloaded when converted): only the
    frames a snapshot is taken of may be converted, and the snapshot shows the picture."""
    from edge_app.detect.nv12_reference import bgr_to_nv12
    from edge_app.capture.gpu_image import HostNv12Image

    grey = np.full((HEIGHT, WIDTH, 3), 90, np.uint8)
    frames = [HostNv12Image(bgr_to_nv12(grey)) for _ in range(30)]
    scores = [0.6] * 15 + [0.9] * 15
    objects = [Obj(0, still(100, 100), score=lambda f: scores[f])]
    camera = analysis()
    results = [camera.process(f, frame_time(f), frames[f], detections_at(objects, f)) for f in range(30)]
    taken = [i for i, _ in snapshots_of(results)]
    assert taken == [2, 15]
    assert [f.conversions for f in frames] == [1 if i in taken else 0 for i in range(30)]
    picture = cv2.imdecode(np.frombuffer(snapshots_of(results)[0][1].jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (HEIGHT, WIDTH, 3) and abs(int(picture[450, 600].mean()) - 90) <= 3


# ------------------------------------------------------------------------------- counts
def counts_over(results, key):
    """The latest count reported for ``key`` at each frame (None before the first report)."""
    out, current = [], None
    for r in results:
        current = r.object_counts.get(key, current)
        out.append(current)
    return out


def test_object_counts_per_label_fall_to_zero_after_they_leave():
    objects = [Obj(0, still(100, 100), last=9), Obj(0, still(300, 100), last=19), Obj(2, still(500, 300), first=5, last=9)]
    a = analysis(end_after_s=1.0)
    results = run(a, objects, 40)
    person = counts_over(results, "person")
    assert person[0] is None and person[1] == 2
    assert person[19] == 2 and person[-1] == 0
    car = counts_over(results, "car")
    assert car[6] == 1 and car[-1] == 0
    assert a.counts().objects == {"person": 0, "car": 0}
    # Only changes are reported, and never a label that was not seen.
    assert sum(1 for r in results if "person" in r.object_counts) == 3
    assert all(set(r.object_counts) <= {"person", "car"} for r in results)


def test_zone_counts_follow_objects_in_and_out():
    yard = Zone("yard", ((0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (0.5, 1.0)))
    inside, outside = Obj(0, still(400, 100), last=19), Obj(0, still(50, 100))
    a = analysis(zones=[yard], end_after_s=1.0)
    results = run(a, [inside, outside], 40)
    changes = [(i, r.zone_counts) for i, r in enumerate(results) if r.zone_counts]
    assert [c for _, c in changes] == [{("yard", "person"): 1}, {("yard", "person"): 0}]
    assert a.counts().zones == {"yard": {"person": 0}}


# -------------------------------------------------------------------------------- lines
GATE = Line("gate", (0.5, 0.0), (0.5, 1.0))


@pytest.mark.parametrize("dx, direction", [(-20, "in"), (20, "out")])
def test_a_line_crossing_counts_once_in_its_direction(dx, direction):
    x0 = 500 if dx < 0 else 100
    a = analysis(lines=[GATE])
    results = run(a, [Obj(0, moving(x0, 100, dx))], 25)
    crossings = [c for r in results for c in r.crossings]
    assert len(crossings) == 1
    crossing = crossings[0]
    assert (crossing.line, crossing.label, crossing.direction) == ("gate", "person", direction)
    event = messages(results, "new")[0][1].after
    assert crossing.event_id == event.id and crossing.track_id == event.track_id
    expected = LineTotals(1, 0) if direction == "in" else LineTotals(0, 1)
    assert [r.line_counts for r in results if r.line_counts] == [{"gate": expected}]
    assert a.counts().lines == {"gate": expected}


def test_jitter_on_the_line_counts_nothing_more():
    # Crosses once, then wobbles a few pixels around the line for a second.
    box = lambda f: (500 - 20 * f, 100, 560 - 20 * f, 220) if f < 14 else (290 + (4 if f % 2 else -4), 100, 350 + (4 if f % 2 else -4), 220)
    results = run(analysis(lines=[GATE]), [Obj(0, box)], 40)
    assert [c.direction for r in results for c in r.crossings] == ["in"]


def test_line_counts_continue_from_persisted_values():
    a = analysis(lines=[GATE], line_seed={"gate": (5, 7), "removed_line": (1, 1)})
    assert a.counts().lines == {"gate": LineTotals(5, 7)}
    results = run(a, [Obj(0, moving(500, 100, -20)), Obj(2, moving(100, 300, 20))], 25)
    assert a.counts().lines == {"gate": LineTotals(6, 8)}
    assert [c.label for r in results for c in r.crossings] and results[-1].line_counts == {}


def test_a_crossing_before_the_object_is_an_event_has_no_event_id():
    a = analysis(lines=[GATE], min_frames=50)
    crossings = [c for r in run(a, [Obj(0, moving(340, 100, -20))], 10) for c in r.crossings]
    assert len(crossings) == 1 and crossings[0].event_id is None


@pytest.mark.parametrize("seed", [{"gate": (-1, 0)}, {"gate": ("x", 0)}, {"gate": (1,)}])
def test_bad_persisted_line_counts_are_refused(seed):
    with pytest.raises((ValueError, TypeError)):
        LineCounts(["gate"], seed)


def test_line_counts_reset():
    counts = LineCounts(["a", "b"], {"a": LineTotals(2, 3), "b": (4, 4)})
    counts.add(LineCrossing("a", 1, "person", "out"))
    assert counts.totals()["a"] == LineTotals(2, 4)
    counts.reset("a")
    assert counts.totals() == {"a": LineTotals(0, 0), "b": LineTotals(4, 4)}
    counts.reset()
    assert counts.totals()["b"] == LineTotals(0, 0)


def test_end_all_drops_zone_counts_and_keeps_line_totals():
    yard = Zone("yard", ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)))
    a = analysis(zones=[yard], lines=[GATE])
    run(a, [Obj(0, moving(500, 100, -20))], 25)
    assert a.counts().zones == {"yard": {"person": 1}} and a.counts().lines == {"gate": LineTotals(1, 0)}
    final = a.end_all(frame_time(25))
    assert final.zone_counts == {("yard", "person"): 0} and final.object_counts == {"person": 0}
    assert a.counts().lines == {"gate": LineTotals(1, 0)}


def test_from_config():
    from edge_app.config.file import parse_config
    cfg = parse_config({
        "model": {"path": "m.onnx"},
        "cameras": [{"id": "cam1", "source": "rtsp://h/s",
                     "zones": [{"name": "yard", "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]], "labels": ["person"]}],
                     "lines": [{"name": "gate", "points": [[0.5, 0], [0.5, 1]]}]}],
        "events": {"labels": ["person"], "min_frames": 4, "end_after_s": 1.5, "snapshots": False},
    })
    a = CameraAnalysis.from_config(cfg.cameras[0], cfg.events, jpeg_quality=70, line_seed={"gate": (2, 1)})
    assert a.settings.min_frames == 4 and a.settings.event_labels == {"person"} and not a.settings.snapshots.enabled
    assert a.tracker.settings.lost_timeout_s == 1.5 and a.settings.snapshots.jpeg_quality == 70
    assert [z.name for z in a.placement.zones.zones] == ["yard"] and a.counts().lines == {"gate": LineTotals(2, 1)}
    results = run(a, [Obj(0, moving(500, 100, -20)), Obj(2, still(100, 300))], 25)
    assert {m.after.label for _, m in messages(results, "new")} == {"person"}


def test_the_label_snapshot_is_that_of_the_latest_event_of_the_label():
    # An older person gets a better picture later; the retained per-label snapshot stays the newer one's.
    old = Obj(0, still(100, 100), score=lambda f: 0.95 if f >= 25 else 0.6)
    new = Obj(0, still(400, 100), first=10, score=lambda f: 0.7)
    car = Obj(2, still(300, 300), first=5)
    results = run(analysis(), [old, new, car], 40)
    new_event = {m.after.track_id: m.after for _, m in messages(results, "new")}
    person_events = sorted((e for e in new_event.values() if e.label == "person"), key=lambda e: e.start_time)
    old_id, new_id = person_events[0].id, person_events[1].id
    stored = [s for r in results for s in r.snapshots]
    assert any(s.event_id == old_id and s.score == pytest.approx(0.95) for s in stored)  # stored with its event
    published = [(r.frame_id, r.label_snapshots.get("person")) for r in results if "person" in r.label_snapshots]
    ids = [s.event_id for _, s in published]
    assert ids[0] == old_id and set(ids[1:]) == {new_id}
    assert [s.label for r in results for s in r.label_snapshots.values() if s.label == "car"] == ["car"]


def test_reset_line_counts():
    a = analysis(lines=[GATE, Line("side", (0.0, 0.5), (1.0, 0.5))], line_seed={"gate": (3, 4), "side": (1, 1)})
    assert a.reset_line_counts("gate") == {"gate": LineTotals(0, 0), "side": LineTotals(1, 1)}
    assert a.reset_line_counts() == {"gate": LineTotals(0, 0), "side": LineTotals(0, 0)}


def test_each_frame_counts_once_in_the_analysis_stages_and_a_tick_not_at_all():
    camera = analysis(zones=[Zone("left", ((0, 0), (0.5, 0), (0.5, 1), (0, 1)))])
    run(camera, [Obj(0, moving(10, 200, 15))], 20)
    camera.tick(2_000_000_000.0)
    frames = {t.stage: t.frames for t in camera.stage_times.totals()}
    assert frames == {"tracking": 20, "zones_lines": 20, "events": 20, "snapshots": 20}
