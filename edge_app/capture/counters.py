"""A camera's counters: frames, pictures dropped by its sources, reconnects, and the run of
failures the reconnect delay depends on. ``CameraWorker``'s lock guards them; time is passed in."""
from __future__ import annotations

from typing import Optional

from edge_app.capture.backoff import reconnect_delay_s
from edge_app.capture.rate import RateMeter
from edge_app.capture.sources import FrameSource


class CaptureCounters:
    """What ``CameraWorker.stats`` reports of one camera, and its outage for the backoff."""

    def __init__(self) -> None:
        self.frames_captured = 0
        self.meter = RateMeter()
        # pictures a source itself dropped (a decoder process of a live stream): those of sources
        # already closed, and the source being read
        self._source_drops = 0
        self.source: Optional[FrameSource] = None
        self.reconnects = 0
        self.failures = 0  # consecutive, drives the backoff
        self._outage_since_mono_s = 0.0  # when the current run of failures began

    def frame(self, now_mono_s: float) -> None:
        """A frame read (handed on or dropped early): the run of failures is over."""
        self.frames_captured += 1
        self.failures = 0
        self.meter.tick(now_mono_s)

    def failure(self, now_mono_s: float) -> None:
        if self.failures == 0:
            self._outage_since_mono_s = now_mono_s
        self.failures += 1
        self.reconnects += 1

    def reconnect_delay_s(self, now_mono_s: float, initial_s: float, max_s: float) -> float:
        outage_s = now_mono_s - self._outage_since_mono_s if self.failures else 0.0
        return reconnect_delay_s(self.failures, initial_s, max_s, outage_s)

    def source_closed(self) -> None:
        self._source_drops += _dropped_by(self.source)
        self.source = None

    def dropped_by_sources(self) -> int:
        return self._source_drops + _dropped_by(self.source)


def _dropped_by(source: Optional[FrameSource]) -> int:
    """Pictures ``source`` read but could not hand over (sources that never drop have no count)."""
    return int(getattr(source, "dropped", 0) or 0) if source is not None else 0
