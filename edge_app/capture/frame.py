"""What a camera delivers: one ``Frame``."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded frame of one camera.

    ``frame_id`` counts the frames the camera delivered, from 1 upwards per run (SPEC.md), so a
    gap tells a subscriber how many frames were skipped. ``ts`` is the capture time in Unix
    seconds (what MQTT publishes); ``mono_ts`` is ``time.monotonic()`` at capture, for latency
    and pacing, immune to clock steps.
    """

    camera_id: str
    frame_id: int
    ts: float
    mono_ts: float
    image: np.ndarray = field(repr=False)  # BGR uint8, H x W x 3

    @property
    def width(self) -> int:
        return int(self.image.shape[1])

    @property
    def height(self) -> int:
        return int(self.image.shape[0])
