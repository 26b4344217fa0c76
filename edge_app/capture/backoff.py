"""Timing decisions of the capture loop as pure functions: time is always passed in.

Keeping them free of clocks and sleeps makes the reconnect and watchdog rules testable in
microseconds, without cameras.
"""
from __future__ import annotations

from typing import Optional

# A camera away for T seconds is retried at least every T * OUTAGE_RETRY_FRACTION seconds (up to
# the configured maximum), so once it is back it waits at most that fraction of its absence.
OUTAGE_RETRY_FRACTION = 0.2


def reconnect_delay_s(failures: int, initial_s: float = 1.0, max_s: float = 30.0,
                      outage_s: Optional[float] = None) -> float:
    """Delay before reopening after ``failures`` consecutive failures (1, 2, 3, ...).

    Doubles from ``initial_s`` up to ``max_s``, but never beyond ``OUTAGE_RETRY_FRACTION`` of
    ``outage_s``, the time since the failures began (None: pure doubling). Pure
    doubling let a server away for 20 s wait for a 16 s step before the next attempt, while a
    refused attempt costs next to nothing. A camera gone for a day still costs one attempt every
    ``max_s``; one briefly away comes back within a second or two.
    """
    if failures <= 0:
        return 0.0
    # Cap the exponent before computing the power: 2.0 ** 5000 would overflow to an exception.
    exponent = min(failures - 1, 62)
    delay_s = min(max_s, initial_s * (2.0 ** exponent))
    if outage_s is not None:
        delay_s = min(delay_s, max(initial_s, outage_s * OUTAGE_RETRY_FRACTION))
    return delay_s


def watchdog_limit_s(call: str, stall_timeout_s: float, open_timeout_s: float) -> float:
    """How long one blocking backend call may take before the watchdog abandons it.

    The backend's own timeouts (FFmpeg's open and read timeouts are set to ``open_timeout_s`` and
    ``stall_timeout_s``) normally end a dead call first, inside the capture thread; the watchdog
    adds a grace period so it only steps in for backends that ignore those timeouts (GStreamer
    appsink, some V4L2 drivers).
    """
    base_s = open_timeout_s if call == "open" else stall_timeout_s
    return base_s + max(1.0, 0.5 * base_s)
