"""The tracking benchmark's code keeps working: a few frames, our tracker only, no timing asserted."""
import numpy as np
import pytest

from bench.track.compare import iou_distances, run_scene, table
from bench.track.scenes import FRAME_H, FRAME_W, SceneSpec, generate
from testkit.skips import require_module


def test_scenes_are_reproducible_and_consistent():
    spec = SceneSpec("t", objects=8, frames=40, seed=5)
    a, b = generate(spec), generate(spec)
    assert len(a) == 40
    for fa, fb in zip(a, b):
        assert np.array_equal(fa.det_boxes, fb.det_boxes) and np.array_equal(fa.gt_ids, fb.gt_ids)
        assert fa.det_boxes.shape == (len(fa.det_scores), 4) and fa.det_classes.shape == fa.det_scores.shape
        assert len(set(fa.gt_ids.tolist())) == len(fa.gt_ids)
        # every detected object is in the ground truth of its frame
        assert set(fa.det_gt[fa.det_gt >= 0].tolist()) <= set(fa.gt_ids.tolist())
    assert max(len(f.gt_ids) for f in a) <= 8
    assert (a[0].gt_boxes[:, 2] > 0).all() and (a[0].gt_boxes[:, 0] < FRAME_W).all() and (a[0].gt_boxes[:, 3] <= FRAME_H).all()


def test_iou_distances_match_the_motmetrics_convention():
    gt = np.array([[0, 0, 10, 10], [100, 100, 110, 110]], float)
    hyp = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [100, 100, 110, 112]], float)
    d = iou_distances(gt, hyp)
    assert d[0, 0] == 0 and np.isnan(d[0, 1]) and d[1, 2] == pytest.approx(1 - 100 / 120)
    assert iou_distances(gt, np.zeros((0, 4))).shape == (2, 0)


def test_a_short_run_scores_our_tracker():
    require_module("motmetrics")
    result = run_scene(SceneSpec("smoke", objects=5, frames=30), with_reference=False, timing_repeats=1)
    (ours,) = result.scores
    assert ours.tracker == "edge-app" and 0 < ours.idf1 <= 1 and ours.mota <= 1 and ours.id_switches >= 0
    assert ours.ms_per_frame > 0
    assert "| smoke | 5 | 30 (30) |" in table([result])


def test_timing_only_without_scoring():
    result = run_scene(SceneSpec("smoke", objects=3, frames=10), with_reference=False, score=False, timing_repeats=2)
    assert result.scores[0].idf1 is None and "| - / - |" in table([result])


def test_the_dwell_cost_bench_runs_both_sides():
    from bench.track.dwell_cost import run

    result = run(objects=6, zone_count=2, frames=40, rounds=2)
    assert len(result["plain_runs_ms"]) == len(result["rules_runs_ms"]) == 2
    assert result["ms_per_frame_plain"] > 0 and result["ms_per_frame_rules"] > 0
