import numpy as np
import pytest

from edge_app.detect.nms import batched_nms, box_iou, nms

A = [0, 0, 10, 10]
A_SHIFTED = [1, 0, 11, 10]  # IoU with A = 90 / 110
FAR = [50, 50, 60, 60]
A_HALF = [0, 0, 10, 5]  # IoU with A exactly 0.5


@pytest.mark.parametrize(
    "box_a, box_b, expected",
    [
        (A, A, 1.0),
        (A, A_SHIFTED, 90 / 110),
        (A, FAR, 0.0),
        (A, A_HALF, 0.5),
        (A, [10, 0, 20, 10], 0.0),  # touching edges share no area
        ([5, 5, 5, 5], [5, 5, 5, 5], 0.0),  # empty boxes never overlap
    ],
)
def test_box_iou(box_a, box_b, expected):
    assert box_iou([box_a], [box_b])[0, 0] == pytest.approx(expected)


@pytest.mark.parametrize(
    "boxes, scores, classes, iou, expected",
    [
        ([A, A_SHIFTED], [0.9, 0.8], [0, 0], 0.45, [0]),  # same class: the lower one goes
        ([A, A_SHIFTED], [0.8, 0.9], [0, 0], 0.45, [1]),  # whichever scores higher stays
        ([A, A_SHIFTED], [0.9, 0.8], [0, 1], 0.45, [0, 1]),  # different classes: both stay
        ([A, A_SHIFTED], [0.9, 0.8], None, 0.45, [0]),  # class-agnostic
        ([A, FAR], [0.7, 0.9], [0, 0], 0.45, [1, 0]),  # no overlap: both, best first
        ([A, A_HALF], [0.9, 0.8], [3, 3], 0.5, [0, 1]),  # IoU equal to the threshold is kept
        ([A, A_HALF], [0.9, 0.8], [3, 3], 0.49, [0]),
        ([A, A_SHIFTED, FAR], [0.9, 0.8, 0.85], [2, 2, 2], 0.45, [0, 2]),
        ([A, A_SHIFTED, [0, 0, 10, 10.5]], [0.9, 0.8, 0.7], [0, 1, 0], 0.45, [0, 1]),
    ],
)
def test_batched_nms(boxes, scores, classes, iou, expected):
    keep = batched_nms(np.asarray(boxes, np.float32), np.asarray(scores, np.float32), classes, iou)
    assert keep.tolist() == expected


def test_nms_caps_at_max_det():
    boxes = np.asarray([[i * 20, 0, i * 20 + 10, 10] for i in range(10)], np.float32)
    scores = np.linspace(0.9, 0.1, 10).astype(np.float32)
    assert nms(boxes, scores, 0.5, max_det=3).tolist() == [0, 1, 2]


def test_nms_of_nothing_is_empty():
    keep = batched_nms(np.zeros((0, 4), np.float32), np.zeros((0,), np.float32), np.zeros((0,), int), 0.5)
    assert keep.shape == (0,)


def test_class_offset_keeps_distant_classes_apart_with_negative_coordinates():
    boxes = np.asarray([[-100, -100, -90, -90], [-100, -100, -90, -90], [-100, -100, -90, -90]], np.float32)
    keep = batched_nms(boxes, np.asarray([0.9, 0.8, 0.7], np.float32), np.asarray([0, 79, 0]), 0.45)
    assert keep.tolist() == [0, 1]


def test_many_candidates_are_fast_enough():
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 600, (5000, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(5, 40, (5000, 2))], axis=1)
    keep = batched_nms(boxes, rng.uniform(0, 1, 5000), rng.integers(0, 80, 5000), 0.45, max_det=300)
    assert len(keep) == 300 and len(set(keep.tolist())) == 300
