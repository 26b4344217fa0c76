"""Greedy non-maximum suppression on xyxy boxes, class-aware, in plain numpy.

The greedy loop runs once per *kept* box (at most ``max_det``) and each step is one vectorised
IoU against the remaining candidates, so the Python overhead stays small even with thousands
of candidates after the confidence filter.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_MAX_DET = 300


def box_area(xyxy: np.ndarray) -> np.ndarray:
    """Area of each ``(N, 4)`` xyxy box; inverted boxes count as empty."""
    width = np.clip(xyxy[:, 2] - xyxy[:, 0], 0, None)
    height = np.clip(xyxy[:, 3] - xyxy[:, 1], 0, None)
    return width * height


def box_iou(xyxy_a: np.ndarray, xyxy_b: np.ndarray) -> np.ndarray:
    """Pairwise IoU matrix ``(len(a), len(b))`` of two sets of xyxy boxes."""
    a = np.asarray(xyxy_a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(xyxy_b, dtype=np.float64).reshape(-1, 4)
    top_left = np.maximum(a[:, None, :2], b[None, :, :2])
    bottom_right = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(bottom_right - top_left, 0, None), axis=2)
    union = box_area(a)[:, None] + box_area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def nms(xyxy: np.ndarray, scores: np.ndarray, iou_threshold: float, max_det: int = DEFAULT_MAX_DET) -> np.ndarray:
    """Indices of the boxes kept by greedy NMS, best score first.

    A box is suppressed when its IoU with an already kept, higher-scoring box is *greater* than
    ``iou_threshold`` (the torchvision / Ultralytics convention).
    """
    boxes = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if boxes.shape[0] != scores.shape[0]:
        raise ValueError(f"{boxes.shape[0]} boxes but {scores.shape[0]} scores")
    if boxes.shape[0] == 0 or max_det <= 0:
        return np.zeros((0,), dtype=np.int64)
    # A stable sort makes equal scores keep their input order, so results are reproducible.
    order = np.argsort(-scores, kind="stable")
    areas = box_area(boxes)
    keep = []
    while order.size:
        best = order[0]
        keep.append(best)
        if len(keep) >= max_det:
            break
        rest = order[1:]
        top_left = np.maximum(boxes[best, :2], boxes[rest, :2])
        bottom_right = np.minimum(boxes[best, 2:], boxes[rest, 2:])
        inter = np.prod(np.clip(bottom_right - top_left, 0, None), axis=1)
        union = areas[best] + areas[rest] - inter
        iou = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        order = rest[iou <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def batched_nms(
    xyxy: np.ndarray,
    scores: np.ndarray,
    class_ids: Optional[np.ndarray],
    iou_threshold: float,
    max_det: int = DEFAULT_MAX_DET,
) -> np.ndarray:
    """Class-aware NMS: boxes of different classes never suppress each other.

    Each class is shifted to its own region of the plane (offset larger than the span of all
    boxes) so one plain NMS pass handles every class at once. ``class_ids=None`` gives
    class-agnostic NMS. Returns kept indices, best score first.
    """
    boxes = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    if boxes.shape[0] == 0 or class_ids is None:
        return nms(boxes, scores, iou_threshold, max_det)
    classes = np.asarray(class_ids, dtype=np.float64).reshape(-1)
    if classes.shape[0] != boxes.shape[0]:
        raise ValueError(f"{boxes.shape[0]} boxes but {classes.shape[0]} class ids")
    span = float(boxes.max() - boxes.min()) + 1.0
    offset = (classes - classes.min()) * span
    return nms(boxes + offset[:, None], scores, iou_threshold, max_det)
