"""Which frames a camera drops before they cost anything: no colour conversion, no copy.

A frame that the pipeline would not analyse anyway is only *grabbed* (decoded, which the codec
needs for the frames after it) where the source can do that (``OpenCVSource.grab``: FFmpeg
decodes but skips the YUV to BGR conversion and the copy out, about half the CPU of a frame):

* frames sooner than ``fps_limit`` allows (the scheduler would drop them as stale);
* while the motion gate is idle (nothing moves, nothing tracked), frames between two motion
  checks: the gate looks ``IDLE_CHECKS_PER_S`` times a second, which delays noticing the first
  motion by at most 1 / ``IDLE_CHECKS_PER_S`` s.

Files read with ``realtime: false`` never lose a frame: they drop nothing here, and the batch
scheduler holds each back until this same schedule lets it go (``scheduler_fps_limit``). So every
camera has its ``fps_limit`` kept in exactly one place, by one rule with one tolerance. Pure: time
is passed in.
"""
from __future__ import annotations

from typing import Optional

from edge_app.capture.buffer import BufferPolicy

#: motion checks per second of an idle camera
IDLE_CHECKS_PER_S = 5.0
#: a frame up to this part of an interval early is kept (arrival jitter of a steady stream)
EARLY_TOLERANCE = 0.1


class EarlyDrop:
    """Keeps frames on a schedule of one per interval, anchored at the first kept frame, so a
    stream whose rate is not a multiple of the limit still averages the limit."""

    def __init__(self, fps_limit: float) -> None:
        self.interval_s = 1.0 / fps_limit if fps_limit > 0 else 0.0
        self._next_s: Optional[float] = None

    def interval(self, idle: bool = False) -> float:
        """Seconds between kept frames now (0: every frame); ``idle``: the motion gate held back
        the last frame it saw."""
        return max(self.interval_s, 1.0 / IDLE_CHECKS_PER_S if idle else 0.0)

    def earliest_s(self, idle: bool = False) -> Optional[float]:
        """The earliest time a frame is kept again (None: any time)."""
        interval_s = self.interval(idle)
        if interval_s <= 0 or self._next_s is None:
            return None
        return self._next_s - EARLY_TOLERANCE * interval_s

    def keep(self, now_s: float, idle: bool = False) -> bool:
        """Whether the frame arriving at ``now_s`` is converted and handed on; ``idle``: the
        motion gate held back the last frame it saw."""
        earliest_s = self.earliest_s(idle)
        if earliest_s is not None and now_s < earliest_s:
            return False
        self.kept(now_s, idle)
        return True

    def kept(self, now_s: float, idle: bool = False) -> None:
        """A frame was kept at ``now_s``: the next one is due an interval after its slot."""
        interval_s = self.interval(idle)
        due_s = self._next_s
        if interval_s <= 0:
            self._next_s = None
            return
        # on schedule; a stream that fell behind (a gap, a slower rate) starts a new schedule
        on_time = due_s is not None and now_s - due_s < interval_s
        self._next_s = (due_s if on_time else now_s) + interval_s


def capture_fps_limit(policy: BufferPolicy, fps_limit: float) -> float:
    """The rate a camera's capture keeps frames at: its ``fps_limit`` where frames may be dropped."""
    return fps_limit if policy is BufferPolicy.DROP_OLDEST else 0.0


def scheduler_fps_limit(policy: BufferPolicy, fps_limit: float) -> float:
    """The rate the batch scheduler holds a camera to: its ``fps_limit`` only where the capture
    keeps every frame (a file read with ``realtime: false``); elsewhere the capture kept the limit
    already, and a second schedule, started from when a batch was taken rather than when the frame
    came, would hold frames back after every slow batch."""
    return fps_limit if policy is BufferPolicy.WAIT else 0.0
