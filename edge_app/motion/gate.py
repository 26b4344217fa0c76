"""Whether a camera's frame goes to the model: motion, tracked objects, or the keepalive.

A frame is analysed when the camera has motion (and for ``HOLD_S`` after the last moving
frame, so the frames right after a stop are seen too), while the camera has tracked objects
(so their events end properly and objects that stand still are not lost), and every
``keepalive_s`` otherwise (an object that arrived unseen, a mask that hides too much). Pure:
time is passed in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

#: motion stays ON this long after the last frame that moved
HOLD_S = 1.0


@dataclass(frozen=True)
class GateDecision:
    analyse: bool
    reason: str  # "motion" | "objects" | "keepalive" | "idle"
    motion: bool  # the camera's motion state (ON/OFF) after this frame
    motion_changed: bool  # the state differs from the one after the previous frame


class MotionGate:
    """One camera's gate; ``decide`` once per frame, in time order."""

    def __init__(self, keepalive_s: float, hold_s: float = HOLD_S) -> None:
        self.keepalive_s = keepalive_s
        self.hold_s = hold_s
        self._last_motion_s: Optional[float] = None
        self._last_analysed_s: Optional[float] = None
        self._motion = False

    @property
    def motion(self) -> bool:
        return self._motion

    def decide(self, now_s: float, moving: bool, has_objects: bool) -> GateDecision:
        if moving:
            self._last_motion_s = now_s
        was = self._motion
        self._motion = self._last_motion_s is not None and now_s - self._last_motion_s <= self.hold_s
        if self._motion:
            reason = "motion"
        elif has_objects:
            reason = "objects"
        elif self._last_analysed_s is None or now_s - self._last_analysed_s >= self.keepalive_s:
            reason = "keepalive"
        else:
            reason = "idle"
        analyse = reason != "idle"
        if analyse:
            self._last_analysed_s = now_s
        return GateDecision(analyse, reason, self._motion, self._motion != was)
