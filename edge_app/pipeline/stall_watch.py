"""Whether the pipeline is stalled: pure logic with the time passed in.

The pipeline is stalled when it has had work (frames taken for a batch, or a failure in its
loop) for ``stall_after_s`` without completing a single batch since, or when its gather thread
is gone. Cameras that deliver nothing are not a stall: each camera's own watchdog reconnects
them, and restarting the service would not bring a dead camera back. A stalled pipeline is
reported by ``/readyz``, ``/api/v1/status`` and ``/metrics``, and stops the systemd watchdog
pings so that systemd restarts the service.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

from edge_app.process.stall import stalled

#: longest time work may wait for a completed batch; a first TensorRT batch takes a few seconds
STALL_AFTER_S = 20.0


@dataclass(frozen=True)
class PipelineActivity:
    """What the pipeline threads recorded (monotonic seconds); see ``ActivityTracker``."""

    running: bool  # started and not stopped
    gather_alive: bool
    last_batch_s: Optional[float]  # when the last batch completed
    work_since_s: Optional[float]  # earliest work (or failure) not followed by a completed batch
    last_error: Optional[str] = None


@dataclass(frozen=True)
class PipelineHealth:
    stalled: bool
    reason: Optional[str]
    last_batch_age_s: Optional[float]  # None before the first batch


def assess(activity: PipelineActivity, now_s: float, stall_after_s: float = STALL_AFTER_S) -> PipelineHealth:
    age_s = None if activity.last_batch_s is None else round(max(0.0, now_s - activity.last_batch_s), 3)
    if not activity.running:
        return PipelineHealth(False, None, age_s)
    if not activity.gather_alive:
        return PipelineHealth(True, "the pipeline thread has stopped", age_s)
    if stalled(now_s, activity.work_since_s, stall_after_s):
        waited_s = now_s - activity.work_since_s
        reason = f"no batch completed for {waited_s:.0f} s while there was work"
        if activity.last_error:
            reason += f" (last error: {activity.last_error})"
        return PipelineHealth(True, reason, age_s)
    return PipelineHealth(False, None, age_s)


def readiness_reason(health: PipelineHealth) -> Optional[str]:
    """The ``/readyz`` reason for a stalled pipeline, or None."""
    return f"the pipeline is stalled: {health.reason}" if health.stalled else None


class ActivityTracker:
    """Shared by the pipeline's threads: work taken, failures and completed batches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_batch_s: Optional[float] = None
        self._work_since_s: Optional[float] = None
        self._last_error: Optional[str] = None

    def work_taken(self, now_s: float) -> None:
        with self._lock:
            if self._work_since_s is None:
                self._work_since_s = now_s

    def failed(self, now_s: float, what: str) -> None:
        # A failure counts as work not done, so a loop that fails every time is a stall.
        with self._lock:
            self._last_error = what
            if self._work_since_s is None:
                self._work_since_s = now_s

    def batch_done(self, now_s: float) -> None:
        with self._lock:
            self._last_batch_s = now_s
            self._work_since_s = None

    def snapshot(self, running: bool, gather_alive: bool) -> PipelineActivity:
        with self._lock:
            return PipelineActivity(running, gather_alive, self._last_batch_s, self._work_since_s, self._last_error)
