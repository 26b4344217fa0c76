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
    ix1 = np.maximum(a[:, None, 0], b[None, :, 0])
    iy1 = np.maximum(a[:, None, 1], b[None, :, 1])
    ix2 = np.minimum(a[:, None, 2], b[None, :, 2])
    iy2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def iou_cost(track_boxes: np.ndarray, track_classes: np.ndarray, det_boxes: np.ndarray, det_classes: np.ndarray) -> np.ndarray:
    """``1 - IoU``, with pairs of different classes forbidden."""
    cost = 1.0 - iou_matrix(track_boxes, det_boxes)
    cost[track_classes[:, None] != det_classes[None, :]] = FORBIDDEN_COST
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
    _, row_to_col, col_to_row = lap.lapjv(np.ascontiguousarray(cost, dtype=np.float64), extend_cost=True, cost_limit=max_cost)
    matched_rows = np.flatnonzero(row_to_col >= 0)
    pairs = np.stack([matched_rows, row_to_col[matched_rows]], axis=1).astype(np.int64)
    return pairs, np.flatnonzero(row_to_col < 0), np.flatnonzero(col_to_row < 0)
