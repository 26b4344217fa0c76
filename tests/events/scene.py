"""Synthetic scenes for the event tests: objects with known boxes per frame, 10 frames a second."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.detections import Detections
from edge_app.events.camera_analysis import CameraAnalysis
from edge_app.events.frame_analysis import FrameAnalysis

LABELS = ("person", "bicycle", "car")
WIDTH, HEIGHT = 640, 480
FPS = 10.0
T0 = 1_800_000_000.0

Box = Tuple[float, float, float, float]


@dataclass
class Obj:
    """An object visible in frames ``first..last`` (inclusive) whose box and score depend on the frame."""

    class_id: int
    box: Callable[[int], Box]
    first: int = 0
    last: int = 10**9
    score: Callable[[int], float] = lambda _f: 0.9

    def visible(self, frame: int) -> bool:
        return self.first <= frame <= self.last


def still(x: float, y: float, w: float = 60, h: float = 120) -> Callable[[int], Box]:
    return lambda _f: (x, y, x + w, y + h)


def moving(x0: float, y: float, dx_per_frame: float, w: float = 60, h: float = 120) -> Callable[[int], Box]:
    return lambda f: (x0 + dx_per_frame * f, y, x0 + dx_per_frame * f + w, y + h)


def frame_time(frame: int) -> float:
    return T0 + frame / FPS


def detections_at(objects: Sequence[Obj], frame: int) -> Detections:
    shown = [o for o in objects if o.visible(frame)]
    if not shown:
        return Detections.empty(LABELS)
    return Detections(np.array([o.box(frame) for o in shown], np.float32), np.array([o.score(frame) for o in shown], np.float32),
                      np.array([o.class_id for o in shown], np.int32), LABELS)


def image() -> np.ndarray:
    return np.zeros((HEIGHT, WIDTH, 3), np.uint8)


def run(analysis: CameraAnalysis, objects: Sequence[Obj], frames: int, start: int = 0,
        with_image: bool = True) -> List[FrameAnalysis]:
    frame = image() if with_image else None
    return [analysis.process(f, frame_time(f), frame, detections_at(objects, f), (WIDTH, HEIGHT)) for f in range(start, start + frames)]


def messages(results: Sequence[FrameAnalysis], kind: Optional[str] = None):
    """``(frame index in results, EventMessage)`` pairs, optionally of one type."""
    return [(i, m) for i, r in enumerate(results) for m in r.events if kind is None or m.type == kind]
