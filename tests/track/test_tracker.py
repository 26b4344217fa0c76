"""Behaviour of the tracker on small scenes whose ground truth is known frame by frame."""
from typing import Dict, List, Sequence, Tuple

import numpy as np
import pytest

from edge_app.detect.detections import Detections
from edge_app.track import UNTRACKED, Tracker, TrackerSettings
from edge_app.track.matching import assign, iou_matrix

# (ground-truth id, class id, score, box) for one object in one frame
Obj = Tuple[int, int, float, Sequence[float]]


def box_at(cx: float, cy: float, w: float = 40, h: float = 80) -> List[float]:
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def run(frames: List[List[Obj]], fps: float = 30.0, tracker: Tracker = None) -> Tuple[Dict[int, List[int]], Tracker]:
    """Feed ``frames`` and return, per ground-truth id, the track id its box got in each frame it was seen."""
    tracker = Tracker() if tracker is None else tracker
    seen: Dict[int, List[int]] = {}
    for i, objs in enumerate(frames):
        dets = Detections(
            np.array([o[3] for o in objs], np.float32).reshape(-1, 4),
            np.array([o[2] for o in objs], np.float32),
            np.array([o[1] for o in objs], np.int32),
        )
        ids = tracker.update(dets, i / fps)
        assert ids.shape == (len(objs),) and ids.dtype == np.int64
        for obj, tid in zip(objs, ids.tolist()):
            seen.setdefault(obj[0], []).append(tid)
    return seen, tracker


def tracked(ids: List[int]) -> List[int]:
    """Ids after the first sighting (a track needs two sightings to be confirmed)."""
    return ids[1:]


@pytest.mark.parametrize("vx, vy, fps", [
    (0, 0, 30), (3, 0, 30), (15, 0, 30), (-10, 4, 30), (15, 0, 10), (8, 8, 5),
])
def test_constant_motion_keeps_one_id(vx, vy, fps):
    frames = [[(1, 0, 0.9, box_at(300 + vx * f, 300 + vy * f))] for f in range(60)]
    seen, _ = run(frames, fps)
    assert seen[1][0] == UNTRACKED
    assert set(tracked(seen[1])) == {1}


@pytest.mark.parametrize("speed, dy, cls_b", [
    (4, 0, 0),     # head-on, same class, boxes coincide in the middle
    (10, 0, 0),
    (6, 30, 0),    # passing with a vertical offset
    (6, 0, 2),     # a person and a car crossing
])
def test_two_objects_crossing_keep_their_ids(speed, dy, cls_b):
    frames = []
    for f in range(80):
        frames.append([
            (1, 0, 0.9, box_at(100 + speed * f, 300)),
            (2, cls_b, 0.9, box_at(100 + speed * 79 - speed * f, 300 + dy)),
        ])
    seen, _ = run(frames)
    a, b = set(tracked(seen[1])), set(tracked(seen[2]))
    assert len(a) == 1 and len(b) == 1 and a != b


@pytest.mark.parametrize("hidden_frames", [1, 3, 8, 20, 50])
def test_occlusion_for_a_few_frames_keeps_the_id(hidden_frames):
    frames = []
    for f in range(40 + hidden_frames):
        hidden = 20 <= f < 20 + hidden_frames
        frames.append([] if hidden else [(1, 0, 0.9, box_at(100 + 5 * f, 300))])
    seen, _ = run(frames)
    assert set(tracked(seen[1])) == {1}


@pytest.mark.parametrize("miss_every", [2, 3, 5])
def test_missed_detections_keep_the_id(miss_every):
    frames = [[] if f % miss_every == 1 and f > 2 else [(1, 0, 0.9, box_at(100 + 6 * f, 300))] for f in range(60)]
    seen, _ = run(frames)
    assert set(tracked(seen[1])) == {1}


@pytest.mark.parametrize("low_frames, low_score", [(10, 0.3), (45, 0.3), (45, 0.15)])
def test_low_score_detections_keep_a_track_alive(low_frames, low_score):
    # 45 frames at 30 fps outlast lost_timeout_s: only the second stage keeps the track.
    frames = []
    for f in range(20 + low_frames + 10):
        score = low_score if 20 <= f < 20 + low_frames else 0.9
        frames.append([(1, 0, score, box_at(100 + 4 * f, 300))])
    seen, _ = run(frames, tracker=Tracker(TrackerSettings(lost_timeout_s=1.0)))
    assert set(tracked(seen[1])) == {1}


def test_without_the_second_stage_a_long_low_score_stretch_breaks_the_track():
    # The control for the test above: low scores under low_score are ignored, the track dies.
    frames = [[(1, 0, 0.05 if 20 <= f < 65 else 0.9, box_at(100 + 4 * f, 300))] for f in range(75)]
    seen, tracker = run(frames, tracker=Tracker(TrackerSettings(lost_timeout_s=1.0)))
    assert len(set(tracked(seen[1])) - {UNTRACKED}) == 2


def test_low_score_detections_never_start_a_track():
    frames = [[(1, 0, 0.4, box_at(100 + 4 * f, 300))] for f in range(30)]
    seen, tracker = run(frames)
    assert set(seen[1]) == {UNTRACKED}
    assert tracker.active_ids() == ()


@pytest.mark.parametrize("class_a, class_b", [(0, 2), (2, 0), (0, 7)])
def test_classes_never_swap(class_a, class_b):
    # Same box, same motion, different classes: two tracks, each keeps its class.
    frames = [[(1, class_a, 0.9, box_at(100 + 5 * f, 300)), (2, class_b, 0.9, box_at(100 + 5 * f, 300))] for f in range(30)]
    seen, _ = run(frames)
    a, b = set(tracked(seen[1])), set(tracked(seen[2]))
    assert len(a) == 1 and len(b) == 1 and a != b


def test_a_detection_of_another_class_never_takes_a_track():
    frames = [[(1, 0, 0.9, box_at(300, 300))] for _ in range(10)]
    frames += [[(2, 2, 0.9, box_at(300, 300))] for _ in range(10)]
    seen, _ = run(frames)
    assert set(tracked(seen[1])) == {1}
    assert 1 not in seen[2]


def test_ids_are_unique_per_camera_and_never_reused():
    rng = np.random.default_rng(3)
    frames: List[List[Obj]] = []
    # Objects live for 15 frames each, starting every 5 frames, then vanish past the timeout.
    for f in range(300):
        objs = []
        for gt in range(f // 5 - 2, f // 5 + 1):
            if gt >= 0 and 0 <= f - gt * 5 < 15:
                x = 50 + (gt % 8) * 120 + 2 * (f - gt * 5)
                y = 100 + (gt % 3) * 200 + rng.normal(0, 1)
                objs.append((gt, 0, 0.9, box_at(x, y)))
        frames.append(objs)
    seen, tracker = run(frames)
    ids_per_gt = {gt: set(tracked(v)) - {UNTRACKED} for gt, v in seen.items()}
    assert all(len(v) == 1 for v in ids_per_gt.values())
    all_ids = [next(iter(v)) for v in ids_per_gt.values()]
    assert len(all_ids) == len(set(all_ids)) == len(seen)
    # A second camera's tracker is independent of the first.
    other, _ = run(frames[:10])
    assert set(tracked(other[0])) == {1}


def test_removed_ids_reports_tracks_past_the_timeout():
    tracker = Tracker(TrackerSettings(lost_timeout_s=0.5))
    frames = [[(1, 0, 0.9, box_at(300, 300))] for _ in range(5)]
    run(frames, tracker=tracker)
    assert tracker.active_ids() == (1,)
    empty = Detections.empty()
    gone_at = None
    for i in range(5, 30):
        tracker.update(empty, i / 30)
        if tracker.removed_ids:
            gone_at = i
            break
    assert tracker.removed_ids == (1,) and tracker.active_ids() == ()
    assert (gone_at - 4) / 30 > 0.5


def test_a_single_false_positive_consumes_no_id():
    tracker = Tracker()
    ids = tracker.update(Detections([box_at(500, 500)], [0.9], [0]), 0.0)
    assert ids.tolist() == [UNTRACKED]
    tracker.update(Detections.empty(), 1 / 30)
    seen, _ = run([[(1, 0, 0.9, box_at(100, 100))] for _ in range(3)], tracker=tracker)
    assert set(tracked(seen[1])) == {1}


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_timestamp_is_refused(bad):
    with pytest.raises(ValueError, match="timestamp_s"):
        Tracker().update(Detections.empty(), bad)


def test_time_going_back_does_not_break_tracks():
    tracker = Tracker()
    times = [0.0, 0.033, 0.066, 0.05, 0.1, 0.133]
    ids = [tracker.update(Detections([box_at(300 + i, 300)], [0.9], [0]), t).tolist() for i, t in enumerate(times)]
    assert ids[0] == [UNTRACKED] and all(i == [1] for i in ids[1:])


@pytest.mark.parametrize("bad", [
    dict(low_score=0.6, high_score=0.5), dict(match_iou=0), dict(confirm_hits=0), dict(lost_timeout_s=-1),
    dict(reach_heights_per_s=-0.5), dict(reach_from_s=-1),
])
def test_settings_are_checked(bad):
    with pytest.raises(ValueError):
        TrackerSettings(**bad)


def test_max_tracks_bounds_the_work():
    tracker = Tracker(TrackerSettings(max_tracks=5, confirm_hits=1))
    boxes = [box_at(50 + 60 * i, 300) for i in range(8)]
    ids = tracker.update(Detections(boxes, [0.9] * 8, [0] * 8), 0.0)
    assert (ids != UNTRACKED).sum() == 5 and len(tracker) == 5


@pytest.mark.parametrize("a, b, expected", [
    ([0, 0, 10, 10], [0, 0, 10, 10], 1.0),
    ([0, 0, 10, 10], [5, 0, 15, 10], 50 / 150),
    ([0, 0, 10, 10], [20, 20, 30, 30], 0.0),
    ([0, 0, 0, 0], [0, 0, 0, 0], 0.0),
])
def test_iou(a, b, expected):
    assert iou_matrix(np.array([a], float), np.array([b], float))[0, 0] == pytest.approx(expected)


@pytest.mark.parametrize("cost, max_cost, pairs", [
    ([[0.1, 0.9], [0.8, 0.2]], 0.5, [(0, 0), (1, 1)]),
    ([[0.1, 0.9], [0.8, 0.7]], 0.5, [(0, 0)]),
    # The optimum over both rows, not greedy: row 0 gives up its best column.
    ([[0.1, 0.2], [0.15, 0.9]], 0.5, [(0, 1), (1, 0)]),
    ([[0.6]], 0.5, []),
    (np.zeros((0, 3)), 0.5, []),
])
def test_assign(cost, max_cost, pairs):
    got, free_rows, free_cols = assign(np.array(cost, float).reshape(len(cost), -1) if len(cost) else np.zeros((0, 3)), max_cost)
    assert sorted(map(tuple, got.tolist())) == pairs
    rows = np.array(cost).shape[0] if len(cost) else 0
    assert len(free_rows) == rows - len(pairs)


def test_reset_forgets_tracks_but_never_reuses_ids():
    tracker = Tracker()
    seen, _ = run([[(1, 0, 0.9, box_at(300, 300))] for _ in range(3)], tracker=tracker)
    tracker.reset()
    assert len(tracker) == 0 and tracker.active_ids() == ()
    again, _ = run([[(1, 0, 0.9, box_at(300, 300))] for _ in range(3)], tracker=tracker)
    assert set(tracked(seen[1])) == {1} and set(tracked(again[1])) == {2}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("density", [0.05, 0.3, 0.8])
def test_assign_equals_the_solver_with_a_cost_limit(seed, density):
    # The shortcut for conflict-free matrices must give what the solver gives.
    import lap

    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(1, 12, size=2)
    cost = np.where(rng.random((rows, cols)) < density, rng.uniform(0, 0.7, (rows, cols)), 1.0)
    got, free_rows, free_cols = assign(cost, 0.8)
    _, row_to_col, _ = lap.lapjv(cost, extend_cost=True, cost_limit=0.8)
    want = sorted((r, int(c)) for r, c in enumerate(row_to_col) if c >= 0)
    assert sorted(map(tuple, got.tolist())) == want
    assert sorted(free_rows.tolist() + got[:, 0].tolist()) == list(range(rows))
    assert sorted(free_cols.tolist() + got[:, 1].tolist()) == list(range(cols))


def test_a_nan_box_never_takes_or_breaks_a_track():
    # Two overlapping objects, so the solver (not the conflict-free shortcut) sees the NaN box.
    tracker = Tracker()
    for i in range(5):
        tracker.update(Detections([box_at(300 + 2 * i, 300), box_at(320 + 2 * i, 300)], [0.9, 0.9], [0, 0]), i / 30)
    nan_box = [float("nan")] * 4
    for i in range(5, 10):
        dets = Detections([nan_box, box_at(300 + 2 * i, 300), box_at(320 + 2 * i, 300)], [0.9, 0.9, 0.9], [0, 0, 0])
        assert tracker.update(dets, i / 30).tolist() == [UNTRACKED, 1, 2]


# A person 400 px tall walking at 100 px/s (a quarter of their height a second, the pace of the
# walking clip of the end-to-end tests), analysed as slowly as a loaded device manages.
@pytest.mark.parametrize("fps", [0.5, 0.8, 1.0, 2.0, 5.0])
def test_a_walker_seen_at_a_low_analysed_rate_gets_an_id_at_its_second_sighting(fps):
    frames = [[(1, 0, 0.9, box_at(200 + 100 * t / fps, 400, w=150, h=400))] for t in range(8)]
    seen, _ = run(frames, fps)
    assert seen[1][0] == UNTRACKED and set(tracked(seen[1])) == {1}


@pytest.mark.parametrize("fps", [0.8, 2.0])
def test_walkers_side_by_side_at_a_low_analysed_rate_keep_their_own_ids(fps):
    # apart by twice their width, so that each is nearer to where it was than to its neighbour
    frames = [[(k, 0, 0.9, box_at(200 + 300 * k + 100 * t / fps, 400, w=150, h=400)) for k in range(4)]
              for t in range(8)]
    seen, _ = run(frames, fps)
    ids = [set(tracked(seen[k])) for k in range(4)]
    assert all(len(i) == 1 and UNTRACKED not in i for i in ids) and len(set.union(*ids)) == 4, ids


def test_two_sightings_further_apart_than_anyone_walks_are_not_one_object():
    # one false positive, then another of the same class and size three heights away 0.5 s later
    tracker = Tracker()
    assert tracker.update(Detections([box_at(200, 400, w=40, h=80)], [0.9], [0]), 0.0).tolist() == [UNTRACKED]
    assert tracker.update(Detections([box_at(440, 400, w=40, h=80)], [0.9], [0]), 0.5).tolist() == [UNTRACKED]
    assert tracker.active_ids() == ()


def test_a_tentative_track_reaches_no_further_for_a_gap_longer_than_the_lost_timeout():
    tracker = Tracker(TrackerSettings(lost_timeout_s=2.0))
    tracker.update(Detections([box_at(200, 400, w=40, h=80)], [0.9], [0]), 0.0)
    # 60 s later something of that class six heights away is someone else, not the first one walking
    assert tracker.update(Detections([box_at(680, 400, w=40, h=80)], [0.9], [0]), 60.0).tolist() == [UNTRACKED]
