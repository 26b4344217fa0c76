"""What becomes of a camera's frame before the pipeline: dropped before it is converted (fps_limit,
an idle motion gate: ``early_drop``), held back by the motion gate, or handed on.

A frame the motion gate holds back stays in the camera's slot for snapshots and live view but is
never offered to the pipeline.
"""
from __future__ import annotations

import logging
from typing import Any, Optional, Protocol

from edge_app.capture.early_drop import EarlyDrop
from edge_app.capture.frame import Frame

logger = logging.getLogger(__name__)


class FrameAdmission(Protocol):
    """Whether a frame goes on to the pipeline (``edge_app.motion.watch.MotionWatch``)."""

    def admit(self, image: Any, now_s: float) -> bool: ...

    def report(self) -> Any: ...


class FrameGate:
    """A camera's motion gate (if any) and early drop, asked by its capture thread frame by frame."""

    def __init__(self, camera_id: str, early_drop: Optional[EarlyDrop]) -> None:
        self.camera_id = camera_id
        self._admission: Optional[FrameAdmission] = None
        self.newest_held_back = False
        # frames dropped before conversion (fps_limit, an idle motion gate); None for files read
        # with realtime: false, which lose no frame
        self._early_drop = early_drop
        self.dropped_early = 0
        self._gate_failed = False

    def use(self, admission: Optional[FrameAdmission]) -> None:
        """Gate frames from now on (None: every frame goes to the pipeline)."""
        self._admission = admission
        self.newest_held_back = False

    def report(self) -> Any:
        admission = self._admission
        return admission.report() if admission is not None else None

    def skips(self, now_s: float) -> bool:
        """Whether the frame arriving at ``now_s`` is dropped before it is converted."""
        early = self._early_drop
        return early is not None and not early.keep(now_s, self.newest_held_back)

    def skips_from(self, source: Any, now_s: float) -> bool:
        """Like :meth:`skips`, for a frame of ``source``. A source that drops frames before it copies
        them out of the decoder (a decoder process: ``pace(interval_s)``) is told the interval
        instead, and nothing is dropped here: its frames are already on that schedule."""
        pace = getattr(source, "pace", None)
        if pace is None or self._early_drop is None:
            return self.skips(now_s)
        pace(self._early_drop.interval(self.newest_held_back))
        return False

    def admits(self, frame: Frame) -> bool:
        """Whether ``frame`` goes on to the pipeline; one held back is still the newest to show."""
        admission = self._admission
        self.newest_held_back = admission is not None and not self._admitted(admission, frame)
        return not self.newest_held_back

    def _admitted(self, admission: FrameAdmission, frame: Frame) -> bool:
        try:
            return admission.admit(frame.image, frame.mono_ts)
        except Exception:  # a bug in the gate must not cost frames: let them through
            if not self._gate_failed:
                self._gate_failed = True
                logger.exception("camera %s: motion gate failed", self.camera_id)
            return True
