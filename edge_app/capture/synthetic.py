"""``test://<pattern>`` sources: frames generated in Python, no OpenCV backend or camera needed.

Used for demos, for trying a configuration on a bench without cameras, and in tests. Patterns:

* ``bars``  - the classic colour bars (static)
* ``box``   - a white box moving over a dark grey background (something changes every frame)
* ``noise`` - random pixels (worst case for encoders and the detector's pre-processing)
* ``black`` - an all-black frame

Frames are paced at the requested fps on the monotonic clock, like a live camera.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Optional

import numpy as np

from edge_app.config.source_spec import TEST_PATTERNS as PATTERNS  # the names parse_source accepts

# BGR colour bars: white, yellow, cyan, green, magenta, red, blue, black.
_BARS_BGR = ((255, 255, 255), (0, 255, 255), (255, 255, 0), (0, 255, 0),
             (255, 0, 255), (0, 0, 255), (255, 0, 0), (0, 0, 0))


def _bars(width: int, height: int) -> np.ndarray:
    image = np.zeros((height, width, 3), np.uint8)
    edges = np.linspace(0, width, len(_BARS_BGR) + 1).astype(int)
    for colour, x0, x1 in zip(_BARS_BGR, edges[:-1], edges[1:]):
        image[:, x0:x1] = colour
    return image


class SyntheticSource:
    """A live-like frame source producing one pattern at a fixed size and rate."""

    live = True

    def __init__(self, pattern: str, width: int, height: int, fps: float,
                 monotonic: Callable[[], float] = time.monotonic, seed: Optional[int] = None) -> None:
        if pattern not in PATTERNS:
            raise ValueError(f"unknown test pattern {pattern!r}; use one of {', '.join(PATTERNS)}")
        self.pattern = pattern
        self.width = width
        self.height = height
        self.fps = float(fps)
        self._monotonic = monotonic
        self._rng = np.random.default_rng(seed)
        self._index = 0
        self._next_mono_s: Optional[float] = None
        self._released = threading.Event()
        self._static: Dict[str, np.ndarray] = {
            "bars": _bars(width, height),
            "black": np.zeros((height, width, 3), np.uint8),
            "box": np.full((height, width, 3), 48, np.uint8),
        }

    def read(self) -> Optional[np.ndarray]:
        """The next frame, after waiting for its turn; None once released."""
        if not self._wait_turn():
            return None
        self._index += 1
        return self._render(self._index)

    def _wait_turn(self) -> bool:
        period_s = 1.0 / self.fps if self.fps > 0 else 0.0
        now_s = self._monotonic()
        if self._next_mono_s is None or now_s - self._next_mono_s > period_s:
            self._next_mono_s = now_s  # first frame, or we fell behind: do not burst
        delay_s = self._next_mono_s - now_s
        if delay_s > 0 and self._released.wait(delay_s):
            return False
        self._next_mono_s += period_s
        return not self._released.is_set()

    def _render(self, index: int) -> np.ndarray:
        if self.pattern == "noise":
            return self._rng.integers(0, 256, (self.height, self.width, 3), dtype=np.uint8)
        image = self._static[self.pattern].copy()
        if self.pattern == "box":
            side = max(4, min(self.width, self.height) // 5)
            span_x = max(1, self.width - side)
            span_y = max(1, self.height - side)
            # Bounce along both axes so the box never leaves the frame.
            x = abs((index * 7) % (2 * span_x) - span_x)
            y = abs((index * 5) % (2 * span_y) - span_y)
            image[y:y + side, x:x + side] = 255
        return image

    def release(self) -> None:
        self._released.set()
