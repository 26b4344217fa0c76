"""A scene of known speed: the bus of bus.jpg driving left to right across a grey frame.

The frame has a known scale (``metres_per_px``, the same everywhere: a camera looking square at
the road from far away), so a speed in km/h is a number of pixels a second, and two vertical
lines ``line_gap`` of the frame width apart are ``distance_m`` apart on the road. The bus starts
with its left edge at the frame's left edge and stops with its right edge at the right edge; at
frame ``i`` of a run at ``fps`` it has moved ``speed * i / fps`` (plus ``phase_s`` of travel, so
several runs cross the lines at different points between two frames).

The speed benchmark (``python -m bench.cpu speed-error``) and the end-to-end speed test both draw
it, so the figure in docs/analytics.md and the test's bound are about the same picture.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Tuple

import numpy as np

#: the bus of bus.jpg (x1, y1, x2, y2 in its pixels: the model's box of it), people in front included
BUS_CROP = (34, 230, 800, 770)
KMH_PER_MPS = 3.6


@dataclass(frozen=True)
class SpeedScene:
    picture: Path
    size: Tuple[int, int] = (1280, 720)
    scale: float = 0.5                 # of the crop: 383 px for a 12 m bus
    metres_per_px: float = 0.03
    first_line_x: float = 0.4          # fractions of the frame width
    second_line_x: float = 0.7
    grey: int = 128
    noise_sigma: float = 4.0           # grey levels of sensor noise on every frame

    @property
    def distance_m(self) -> float:
        return (self.second_line_x - self.first_line_x) * self.size[0] * self.metres_per_px

    def lines(self) -> List[dict]:
        """The pair as ``cameras[].lines`` entries (the first holds the speed section)."""
        return [{"name": "speed_a", "points": [[self.first_line_x, 0.0], [self.first_line_x, 1.0]],
                 "speed": {"to_line": "speed_b", "distance_m": round(self.distance_m, 6)}},
                {"name": "speed_b", "points": [[self.second_line_x, 0.0], [self.second_line_x, 1.0]]}]

    def bus(self) -> np.ndarray:
        import cv2

        source = cv2.imread(str(self.picture), cv2.IMREAD_COLOR)
        if source is None:
            raise RuntimeError(f"cannot read {self.picture}")
        x1, y1, x2, y2 = BUS_CROP
        crop = source[y1:y2, x1:x2]
        return cv2.resize(crop, (int(round(crop.shape[1] * self.scale)), int(round(crop.shape[0] * self.scale))),
                          interpolation=cv2.INTER_AREA)

    def travel_s(self, speed_kmh: float) -> float:
        """How long the drive from the left edge to the right edge lasts."""
        bus_w = int(round((BUS_CROP[2] - BUS_CROP[0]) * self.scale))
        return (self.size[0] - bus_w) * self.metres_per_px / (speed_kmh / KMH_PER_MPS)

    def frames(self, speed_kmh: float, fps: float, phase_s: float = 0.0) -> Iterator[Tuple[float, np.ndarray]]:
        """``(seconds since the start, BGR frame)`` of one drive."""
        bus = self.bus()
        width, height = self.size
        bus_h, bus_w = bus.shape[:2]
        top = height - bus_h - (height - bus_h) // 4
        px_per_s = speed_kmh / KMH_PER_MPS / self.metres_per_px
        canvas = np.full((height, width, 3), self.grey, np.uint8)
        rng = np.random.default_rng(0)
        count = int((self.travel_s(speed_kmh) - phase_s) * fps) + 1
        for i in range(count):
            t_s = i / fps
            left = int(round((t_s + phase_s) * px_per_s))
            frame = canvas.copy()
            frame[top:top + bus_h, left:left + bus_w] = bus
            if self.noise_sigma > 0:
                noise = rng.normal(0.0, self.noise_sigma, (height, width)).astype(np.float32)[:, :, None]
                frame = np.clip(frame.astype(np.float32) + noise, 0, 255).astype(np.uint8)
            yield t_s, frame
