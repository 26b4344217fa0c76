"""The letterbox kernel's arithmetic in numpy, step for step. NOT the CUDA kernel.

Used two ways: CPU tests check that this arithmetic reproduces the CPU letterbox (so a
kernel that computes the same is right by construction), and the host-memory CUDA stand-in
runs it in place of the kernel so the backend's GPU-preprocessing path can be exercised
without a GPU. The GPU tests compare the real kernel with the CPU path directly.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np


def axis_weights(new_n: int, src_n: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """edge_axis() for every output position: (i0, i1, w0, w1) with 11-bit weights."""
    f = ((np.arange(new_n, dtype=np.float64) + 0.5) * (src_n / new_n) - 0.5).astype(np.float32)
    i0 = np.floor(f).astype(np.int64)
    frac = (f - i0.astype(np.float32)).astype(np.float32)
    low = i0 < 0
    i0[low], frac[low] = 0, 0.0
    high = i0 >= src_n - 1
    i0[high], frac[high] = src_n - 1, 0.0
    i1 = np.minimum(i0 + 1, src_n - 1)
    w0 = np.rint((np.float32(1.0) - frac) * np.float32(2048.0)).astype(np.int64)
    w1 = np.rint(frac * np.float32(2048.0)).astype(np.int64)
    return i0, i1, w0, w1


def emulate_letterbox(src: np.ndarray, dst_hw: Tuple[int, int], new_wh: Tuple[int, int], pad_xy: Tuple[int, int],
                      pad_value: float) -> np.ndarray:
    """The (3, H, W) float32 tensor the kernel writes for one BGR uint8 frame."""
    src_h, src_w = src.shape[:2]
    new_w, new_h = new_wh
    x0, x1, a0, a1 = axis_weights(new_w, src_w)
    y0, y1, b0, b1 = axis_weights(new_h, src_h)
    pixels = src.astype(np.int64)
    top = pixels[y0][:, x0] * a0[None, :, None] + pixels[y0][:, x1] * a1[None, :, None]
    bottom = pixels[y1][:, x0] * a0[None, :, None] + pixels[y1][:, x1] * a1[None, :, None]
    level = ((((top >> 4) * b0[:, None, None]) >> 16) + (((bottom >> 4) * b1[:, None, None]) >> 16) + 2) >> 2
    values = np.clip(level, 0, 255).astype(np.float32) * np.float32(1.0 / 255.0)
    out = np.full((3, *dst_hw), np.float32(pad_value), dtype=np.float32)
    left, top_pad = pad_xy
    out[:, top_pad:top_pad + new_h, left:left + new_w] = values.transpose(2, 0, 1)[::-1]
    return out


def emulate_yolo_candidates(pred: np.ndarray, conf: float, keep_class, cap: int):
    """``yolo_candidates``'s contract in numpy for one image ``(4+C, A)``: rows (cx, cy, w, h,
    score, class) and anchor indices of the anchors whose best score is above ``conf`` (first
    class on ties) and whose class is kept, at most ``cap`` of them; and how many there were.
    The kernel appends in no particular order; this emulation shuffles them to say so."""
    scores = pred[4:].astype(np.float32)
    best, cls = scores.max(axis=0), scores.argmax(axis=0)
    chosen = np.flatnonzero((best > np.float32(conf)) & (keep_class[cls] if keep_class is not None else True))
    count = len(chosen)
    chosen = np.random.default_rng(count).permutation(chosen)[:cap]
    rows = np.concatenate([pred[:4, chosen].T.astype(np.float32), best[chosen, None], cls[chosen, None].astype(np.float32)], axis=1)
    return rows, chosen.astype(np.int32), count


def emulate_yolo_nms(rows: np.ndarray, anchors: np.ndarray, count: int, cap: int, iou_threshold: float, max_det: int):
    """``yolo_nms``'s contract for one image: kept rows (x1, y1, x2, y2, score, class), or None
    when ``count`` exceeds ``cap``. Sorted by score, anchors in order on ties; greedy, per class."""
    if count > cap:
        return None
    order = np.lexsort((anchors, -rows[:, 4]))
    rows = rows[order]
    half = rows[:, 2:4] / np.float32(2)
    xyxy = np.concatenate([rows[:, :2] - half, rows[:, :2] + half], axis=1)
    area = np.clip(xyxy[:, 2] - xyxy[:, 0], 0, None) * np.clip(xyxy[:, 3] - xyxy[:, 1], 0, None)
    suppressed = np.zeros(len(rows), bool)
    kept = []
    for i in range(len(rows)):
        if suppressed[i]:
            continue
        kept.append(i)
        if len(kept) >= max_det:
            break
        w = np.clip(np.minimum(xyxy[i, 2], xyxy[:, 2]) - np.maximum(xyxy[i, 0], xyxy[:, 0]), 0, None)
        h = np.clip(np.minimum(xyxy[i, 3], xyxy[:, 3]) - np.maximum(xyxy[i, 1], xyxy[:, 1]), 0, None)
        union = area[i] + area - w * h
        iou = np.where(union > 0, w * h / np.where(union > 0, union, 1), 0)
        suppressed |= (iou > iou_threshold) & (rows[:, 5] == rows[i, 5]) & (np.arange(len(rows)) > i)
    return np.concatenate([xyxy[kept], rows[kept, 4:6]], axis=1).astype(np.float32)
