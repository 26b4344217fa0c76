"""Whether something that should make progress has stalled: one rule, with the time passed in.

A camera that delivers no frame, a pipeline that completes no batch while it has work, an MQTT
link on which nothing moves while messages wait: each is stalled once ``timeout_s`` has passed
since the last progress. One function holds the rule (and its boundary: reaching the timeout is
a stall) so that no two watchdogs disagree about the same wait.
"""
from __future__ import annotations

from typing import Optional


def stalled(now_s: float, last_progress_s: Optional[float], timeout_s: float) -> bool:
    """True when ``timeout_s`` or more has passed since ``last_progress_s`` (None: nothing waits).

    Both times come from the same clock (``time.monotonic()`` in the appliance); a
    ``last_progress_s`` after ``now_s`` (read on another thread a moment later) is no stall.
    """
    return last_progress_s is not None and now_s - last_progress_s >= timeout_s
