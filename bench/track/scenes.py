"""Synthetic tracking scenes with known ground truth, and the detections a detector would give.

Objects walk (or drive) across a 1920x1080 frame along lanes in both directions, so they cross
each other head-on; new ones enter as others leave, keeping about ``objects`` in view. Their
velocity drifts slowly. What the simulated detector reports, frame by frame:

- nothing for an object fully behind a pillar (static occluders), or mostly hidden by a nearer
  object (lower on the frame is nearer); a lower score when partly hidden;
- nothing at random at ``miss_rate``;
- the true box plus Gaussian noise of ``box_noise`` times the box size on every side;
- scores drawn around 0.75 for visible objects; false positives at ``false_per_frame`` with
  scores between 0.1 and 0.6.

Ground truth for scoring is every object in the frame that is not fully hidden, whether the
detector missed it or not, so a detector miss costs both trackers the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Tuple

import numpy as np

FRAME_W, FRAME_H = 1920, 1080
PERSON, CAR = 0, 2


@dataclass(frozen=True)
class SceneSpec:
    name: str
    objects: int
    frames: int = 300
    fps: float = 30.0
    box_noise: float = 0.03          # std of each box side, as a fraction of the box size
    miss_rate: float = 0.05
    false_per_frame: float = 0.3
    pillars: int = 2                 # static occluders, 90 px wide
    pillar_width_px: float = 90.0
    lanes: int = 0                   # 0: a lane per couple of objects
    car_share: float = 0.2
    seed: int = 0


@dataclass
class Frame:
    """One frame: ground truth and detections, boxes as ``(N, 4)`` x1, y1, x2, y2 pixels."""

    gt_ids: np.ndarray
    gt_boxes: np.ndarray
    det_boxes: np.ndarray
    det_scores: np.ndarray
    det_classes: np.ndarray
    det_gt: np.ndarray = field(repr=False)   # ground-truth id of each detection, -1 for a false positive


@dataclass
class _Mover:
    gt_id: int
    cls: int
    x: float
    y: float
    w: float
    h: float
    vx: float
    vy: float


def _spawn(rng: np.random.Generator, gt_id: int, spec: SceneSpec, lane_ys: np.ndarray, anywhere: bool) -> _Mover:
    cls = CAR if rng.random() < spec.car_share else PERSON
    if cls == CAR:
        w, h, speed = rng.uniform(160, 260), rng.uniform(90, 140), rng.uniform(250, 450)
    else:
        h = rng.uniform(110, 220)
        w, speed = h * rng.uniform(0.35, 0.5), rng.uniform(60, 160)
    leftwards = rng.random() < 0.5
    y = float(rng.choice(lane_ys)) + rng.normal(0, 15)
    if anywhere:
        x = rng.uniform(0, FRAME_W)
    else:
        x = FRAME_W + w / 2 if leftwards else -w / 2
    return _Mover(gt_id, cls, x, y, w, h, -speed if leftwards else speed, rng.normal(0, 8))


def _boxes(movers: List[_Mover]) -> np.ndarray:
    if not movers:
        return np.zeros((0, 4))
    return np.array([[m.x - m.w / 2, m.y - m.h, m.x + m.w / 2, m.y] for m in movers])


def _hidden_fraction(boxes: np.ndarray, pillars: List[Tuple[float, float]]) -> np.ndarray:
    """How much of each box is covered by pillars or by nearer boxes (0..1)."""
    n = boxes.shape[0]
    area = np.maximum((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]), 1e-6)
    by_pillar = np.zeros(n)
    for x1, x2 in pillars:
        by_pillar += np.clip(np.minimum(boxes[:, 2], x2) - np.maximum(boxes[:, 0], x1), 0, None) / np.maximum(boxes[:, 2] - boxes[:, 0], 1e-6)
    ix = np.clip(np.minimum(boxes[:, None, 2], boxes[None, :, 2]) - np.maximum(boxes[:, None, 0], boxes[None, :, 0]), 0, None)
    iy = np.clip(np.minimum(boxes[:, None, 3], boxes[None, :, 3]) - np.maximum(boxes[:, None, 1], boxes[None, :, 1]), 0, None)
    nearer = boxes[None, :, 3] > boxes[:, None, 3]          # j stands lower on the frame than i
    by_others = ((ix * iy) * nearer).max(axis=1, initial=0.0) / area if n else np.zeros(0)
    return np.clip(np.maximum(by_pillar, by_others), 0, 1)


def generate(spec: SceneSpec) -> List[Frame]:
    rng = np.random.default_rng(spec.seed)
    lanes = spec.lanes or max(2, spec.objects // 2)
    lane_ys = np.linspace(300, FRAME_H - 20, lanes)
    pillars = [(x - spec.pillar_width_px / 2, x + spec.pillar_width_px / 2) for x in np.linspace(0, FRAME_W, spec.pillars + 2)[1:-1]]
    dt = 1.0 / spec.fps
    next_id = 0
    movers: List[_Mover] = []
    for _ in range(spec.objects):
        movers.append(_spawn(rng, next_id, spec, lane_ys, anywhere=True))
        next_id += 1
    frames: List[Frame] = []
    for _ in range(spec.frames):
        boxes = _boxes(movers)
        hidden = _hidden_fraction(boxes, pillars)
        in_view = (boxes[:, 2] > 0) & (boxes[:, 0] < FRAME_W) if len(movers) else np.zeros(0, bool)
        visible = in_view & (hidden < 0.95)
        gt_idx = np.flatnonzero(visible)
        detected = visible & (hidden < 0.7) & (rng.random(len(movers)) >= spec.miss_rate)
        det_idx = np.flatnonzero(detected)
        true_boxes = boxes[det_idx]
        size = np.concatenate([true_boxes[:, 2:4] - true_boxes[:, 0:2]] * 2, axis=1) if len(det_idx) else np.zeros((0, 4))
        noisy = true_boxes + rng.normal(0, spec.box_noise, true_boxes.shape) * size
        scores = np.clip(rng.normal(0.75, 0.1, len(det_idx)) * (1 - hidden[det_idx]), 0.05, 0.99)
        n_false = rng.poisson(spec.false_per_frame)
        fw, fh = rng.uniform(40, 200, n_false), rng.uniform(60, 220, n_false)
        fx, fy = rng.uniform(0, FRAME_W - fw), rng.uniform(0, FRAME_H - fh)
        false_boxes = np.stack([fx, fy, fx + fw, fy + fh], axis=1)
        classes = np.array([movers[i].cls for i in det_idx], np.int32)
        frames.append(Frame(
            gt_ids=np.array([movers[i].gt_id for i in gt_idx], np.int64),
            gt_boxes=boxes[gt_idx],
            det_boxes=np.concatenate([noisy, false_boxes]).astype(np.float32),
            det_scores=np.concatenate([scores, rng.uniform(0.1, 0.6, n_false)]).astype(np.float32),
            det_classes=np.concatenate([classes, np.where(rng.random(n_false) < spec.car_share, CAR, PERSON)]).astype(np.int32),
            det_gt=np.concatenate([[movers[i].gt_id for i in det_idx], np.full(n_false, -1)]).astype(np.int64),
        ))
        survivors = []
        for m in movers:
            m.vx += rng.normal(0, 0.02 * abs(m.vx) + 1)
            m.vy = 0.9 * m.vy + rng.normal(0, 3)
            m.x += m.vx * dt
            m.y = float(np.clip(m.y + m.vy * dt, m.h + 1, FRAME_H))
            if -m.w < m.x < FRAME_W + m.w:
                survivors.append(m)
        while len(survivors) < spec.objects:
            survivors.append(_spawn(rng, next_id, spec, lane_ys, anywhere=False))
            next_id += 1
        movers = survivors
    return frames


SCENES = (
    SceneSpec("walk-5", objects=5),
    SceneSpec("walk-20", objects=20),
    SceneSpec("walk-50", objects=50),
    SceneSpec("crossing-20", objects=20, lanes=3),                  # dense head-on crossings
    SceneSpec("pillars-20", objects=20, pillars=5, pillar_width_px=160),
    SceneSpec("noisy-20", objects=20, box_noise=0.06, miss_rate=0.15, false_per_frame=1.5),
    SceneSpec("10fps-20", objects=20, fps=10.0, frames=150),
)
