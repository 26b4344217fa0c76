"""Which pictures a decoder process hands over: the camera's schedule, kept where the pictures are decoded.

The camera tells its decoder process the interval between the frames it keeps (``fps_limit``, or
a few motion checks a second while its motion gate is idle: ``early_drop``). ``Pace`` keeps that
schedule beside the decoder: every picture is decoded (the next ones need it), only the kept
ones are read out (copied out of the decoder's surface), and the others are counted. A file's
pictures are decoded ahead of real time, so its schedule runs on stream time (picture index /
frame rate); a stream's on arrival time.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from edge_app.capture.early_drop import EarlyDrop


class Pace:
    """One pass of a source: ``next_kept(source)`` instead of ``source.read()``."""

    def __init__(self, interval_s: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = max(0.0, float(interval_s))
        self._clock = clock
        self._schedule = EarlyDrop(1.0 / self.interval_s if self.interval_s > 0 else 0.0)
        self.index = 0
        self.skipped = 0  # pictures decoded but not read out, this pass

    def new_pass(self) -> "Pace":
        """The same interval from the first picture of a new pass (a rewound file's stream time starts again)."""
        return Pace(self.interval_s, self._clock)

    def with_interval(self, interval_s: Any) -> "Pace":
        """This pass with a new interval from now on (the count so far kept)."""
        interval_s = max(0.0, float(interval_s))
        if interval_s == self.interval_s:
            return self
        changed = Pace(interval_s, self._clock)
        changed.index, changed.skipped = self.index, self.skipped
        return changed

    def next_kept(self, source: Any) -> Any:
        """The next picture on the schedule, read out; those before it are grabbed (decoded only)."""
        grab = getattr(source, "grab", None)
        while True:
            self.index += 1
            now_s = self.index / source.fps if not source.live and source.fps else self._clock()
            if self._schedule.keep(now_s):
                return source.read()
            if not (grab() if grab is not None else source.read() is not None):
                return None
            self.skipped += 1
