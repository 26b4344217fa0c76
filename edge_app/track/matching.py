"""Box overlap and the optimal one-to-one assignment of tracks to detections."""
from __future__ import annotations

from typing import Tuple

import lap
import numpy as np

# Cost of pairing boxes of different classes: above any IoU cost (which is at most 1), so the
# solver leaves such a pair unmatched rather than turn a person into a car.
FORBIDDEN_COST = 2.0


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of every box in ``a`` ``(M, 4)`` with every box in ``b`` ``(N, 4)``."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros((a.shape[0], b.shape[0]))
    # np.maximum(x, 0) rather than np.clip: this runs every frame and clip's overhead shows.
    iw = np.maximum(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0.0)
    ih = np.maximum(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0.0)
    inter = iw * ih
    area_a = np.maximum(a[:, 2] - a[:, 0], 0.0) * np.maximum(a[:, 3] - a[:, 1], 0.0)
    area_b = np.maximum(b[:, 2] - b[:, 0], 0.0) * np.maximum(b[:, 3] - b[:, 1], 0.0)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def iou_cost(track_boxes: np.ndarray, track_classes: np.ndarray, det_boxes: np.ndarray, det_classes: np.ndarray) -> np.ndarray:
    """``1 - IoU``, with pairs of different classes forbidden."""
    cost = 1.0 - iou_matrix(track_boxes, det_boxes)
    # A NaN box from a broken model must never be matched (nor reach the solver).
    cost[(track_classes[:, None] != det_classes[None, :]) | ~np.isfinite(cost)] = FORBIDDEN_COST
    return cost


def assign(cost: np.ndarray, max_cost: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minimum-cost matching that only pairs rows and columns costing at most ``max_cost``.

    Returns ``(pairs (K, 2), unmatched rows, unmatched columns)``. The threshold is part of
    the optimisation (Jonker-Volgenant with a cost limit), not a filter applied afterwards, so
    a pair above the threshold never takes a partner away from a valid pair.
    """
    rows, cols = cost.shape
    if rows == 0 or cols == 0:
        return np.zeros((0, 2), dtype=np.int64), np.arange(rows), np.arange(cols)
    allowed = cost <= max_cost
    if (allowed.sum(axis=0) <= 1).all() and (allowed.sum(axis=1) <= 1).all():
        # No row competes with another for a column (objects apart from each other, the usual
        # case): every allowed pair is in the optimum, and the solver's setup cost is saved.
        matched_rows, matched_cols = np.nonzero(allowed)
        free_rows = np.ones(rows, bool)
        free_rows[matched_rows] = False
        free_cols = np.ones(cols, bool)
        free_cols[matched_cols] = False
        return _pairs(matched_rows, matched_cols), np.nonzero(free_rows)[0], np.nonzero(free_cols)[0]
    _, row_to_col, col_to_row = lap.lapjv(np.ascontiguousarray(cost, dtype=np.float64), extend_cost=True, cost_limit=max_cost)
    matched_rows = np.nonzero(row_to_col >= 0)[0]
    pairs = _pairs(matched_rows, row_to_col[matched_rows])
    return pairs, np.nonzero(row_to_col < 0)[0], np.nonzero(col_to_row < 0)[0]


def _pairs(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``(K, 2)`` int64 pairs; written by column, as np.stack's overhead shows on every frame."""
    pairs = np.empty((len(rows), 2), np.int64)
    pairs[:, 0] = rows
    pairs[:, 1] = cols
    return pairs


def reach_cost(track_boxes: np.ndarray, track_classes: np.ndarray, reach_px: np.ndarray,
               det_boxes: np.ndarray, det_classes: np.ndarray, distance_weight: float) -> np.ndarray:
    """``1 - IoU`` of each detection with its track's box moved towards it by up to ``reach_px``
    ``(T,)``, plus ``distance_weight`` times the distance as a share of the reach (at most 1).

    For a track seen once, whose speed is unknown: where it is now is anywhere within reach of
    where it was, so the overlap compares shapes; the distance term makes the nearer of two
    look-alikes win. Pairs of different classes are forbidden as in :func:`iou_cost`.
    """
    t, d = track_boxes.shape[0], det_boxes.shape[0]
    if t == 0 or d == 0:
        return np.zeros((t, d))
    track_centres = (track_boxes[:, :2] + track_boxes[:, 2:]) / 2
    det_centres = (det_boxes[:, :2] + det_boxes[:, 2:]) / 2
    offset = det_centres[None, :, :] - track_centres[:, None, :]              # (T, D, 2)
    distance = np.hypot(offset[..., 0], offset[..., 1])
    reach = np.maximum(reach_px, 0.0)[:, None]
    step = np.where(distance > reach, reach / np.maximum(distance, 1e-12), 1.0)
    moved = track_boxes[:, None, :] + np.tile(offset * step[..., None], 2)     # (T, D, 4)
    iw = np.maximum(np.minimum(moved[..., 2], det_boxes[None, :, 2]) - np.maximum(moved[..., 0], det_boxes[None, :, 0]), 0.0)
    ih = np.maximum(np.minimum(moved[..., 3], det_boxes[None, :, 3]) - np.maximum(moved[..., 1], det_boxes[None, :, 1]), 0.0)
    inter = iw * ih
    area_t = np.maximum(track_boxes[:, 2] - track_boxes[:, 0], 0.0) * np.maximum(track_boxes[:, 3] - track_boxes[:, 1], 0.0)
    area_d = np.maximum(det_boxes[:, 2] - det_boxes[:, 0], 0.0) * np.maximum(det_boxes[:, 3] - det_boxes[:, 1], 0.0)
    union = area_t[:, None] + area_d[None, :] - inter
    iou = np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)
    share = np.minimum(distance / np.maximum(reach, 1e-12), 1.0)
    cost = 1.0 - iou + distance_weight * share
    cost[(track_classes[:, None] != det_classes[None, :]) | ~np.isfinite(cost)] = FORBIDDEN_COST
    return cost
