"""Does the stand-in detect what ONNX Runtime detects? Same images, same decoder, both backends.

A conversion mistake (an op converted wrongly, FP16 overflow) would make every throughput figure
of the GPU benchmark meaningless, so the run starts by comparing the stand-in's detections on
the sample images with the ONNX Runtime backend's, box by box.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import numpy as np

from edge_app.detect import Detector
from edge_app.detect.detections import Detections

#: a box of the stand-in matches one of the reference when the class is the same and IoU is at least this
MATCH_IOU = 0.9


@dataclass
class ImageParity:
    image: str
    reference: int  # detections of the reference backend
    standin: int
    matched: int  # reference boxes with a same-class stand-in box at IoU >= MATCH_IOU
    max_confidence_diff: float  # over the matched pairs


def iou_xyxy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of ``a`` (N, 4) with every box of ``b`` (M, 4)."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)), dtype=np.float64)
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-9)


def compare(name: str, reference: Detections, standin: Detections) -> ImageParity:
    """Greedy one-to-one matching, best IoU first, same class only."""
    ious = iou_xyxy(reference.xyxy.astype(np.float64), standin.xyxy.astype(np.float64))
    ious[reference.class_id[:, None] != standin.class_id[None, :]] = 0.0
    matched, diffs = 0, [0.0]
    while ious.size and ious.max() >= MATCH_IOU:
        i, j = np.unravel_index(int(np.argmax(ious)), ious.shape)
        matched += 1
        diffs.append(abs(float(reference.confidence[i]) - float(standin.confidence[j])))
        ious[i, :] = 0.0
        ious[:, j] = 0.0
    return ImageParity(name, len(reference), len(standin), matched, round(max(diffs), 4))


def check_parity(images: Sequence[Path], reference: Detector, standin: Detector,
                 load_image: Callable[[Path], np.ndarray]) -> Dict[str, object]:
    frames = [load_image(p) for p in images]
    rows: List[ImageParity] = [compare(p.name, r, s) for p, r, s in zip(images, reference.detect(frames), standin.detect(frames))]
    total = sum(r.reference for r in rows)
    return {
        "images": [asdict(r) for r in rows],
        "matched_fraction": round(sum(r.matched for r in rows) / total, 3) if total else None,
        "same_counts": all(r.reference == r.standin for r in rows),
        "max_confidence_diff": max((r.max_confidence_diff for r in rows), default=None),
        "match_iou": MATCH_IOU,
    }
