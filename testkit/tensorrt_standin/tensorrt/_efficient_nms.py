"""The EfficientNMS_TRT plugin's documented behaviour, in numpy, for the stand-in. NOT TensorRT.

Inputs: boxes N x A x 4 (box_coding 0: x1, y1, x2, y2; 1: cx, cy, w, h), scores N x A x C.
Outputs: num_detections N x 1 int32, detection_boxes N x K x 4 float32 (corners),
detection_scores N x K float32, detection_classes N x K int32, K = max_output_boxes, zero padded.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    x1 = np.maximum(box[0], others[:, 0])
    y1 = np.maximum(box[1], others[:, 1])
    x2 = np.minimum(box[2], others[:, 2])
    y2 = np.minimum(box[3], others[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


def _nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> List[int]:
    order = list(np.argsort(-scores, kind="stable"))
    keep: List[int] = []
    while order:
        best = order.pop(0)
        keep.append(best)
        if order:
            ious = _iou(boxes[best], boxes[order])
            order = [i for i, v in zip(order, ious) if v <= iou_threshold]
    return keep


def efficient_nms(boxes: np.ndarray, scores: np.ndarray, attrs: Dict[str, float]) -> List[np.ndarray]:
    k = int(attrs.get("max_output_boxes", 100))
    score_threshold = float(attrs.get("score_threshold", 0.25))
    iou_threshold = float(attrs.get("iou_threshold", 0.45))
    background = int(attrs.get("background_class", -1))
    if int(attrs.get("score_activation", 0)):
        scores = 1.0 / (1.0 + np.exp(-scores))
    if int(attrs.get("box_coding", 0)) == 1:
        cx, cy, w, h = (boxes[..., i] for i in range(4))
        boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=-1)
    batch = boxes.shape[0]
    num = np.zeros((batch, 1), np.int32)
    out_boxes = np.zeros((batch, k, 4), np.float32)
    out_scores = np.zeros((batch, k), np.float32)
    out_classes = np.zeros((batch, k), np.int32)
    for n in range(batch):
        found = []
        for cls in range(scores.shape[2]):
            if cls == background:
                continue
            idx = np.flatnonzero(scores[n, :, cls] > score_threshold)
            for i in _nms(boxes[n, idx], scores[n, idx, cls], iou_threshold):
                found.append((float(scores[n, idx[i], cls]), cls, boxes[n, idx[i]]))
        found.sort(key=lambda item: -item[0])
        found = found[:k]
        num[n, 0] = len(found)
        for j, (score, cls, box) in enumerate(found):
            out_boxes[n, j], out_scores[n, j], out_classes[n, j] = box, score, cls
    return [num, out_boxes, out_scores, out_classes]
