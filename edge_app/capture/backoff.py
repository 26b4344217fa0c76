"""Timing decisions of the capture loop as pure functions: time is always passed in.

Keeping them free of clocks and sleeps makes the reconnect and watchdog rules testable in
microseconds, without cameras.
"""
from __future__ import annotations


def reconnect_delay_s(failures: int, initial_s: float = 1.0, max_s: float = 30.0) -> float:
    """Delay before reopening after ``failures`` consecutive failures (1, 2, 3, ...).

    Doubles from ``initial_s`` up to ``max_s``: a camera that is briefly away comes back within a
    second, one that is gone for a day costs one attempt every ``max_s``.
    """
    if failures <= 0:
        return 0.0
    # Cap the exponent before computing the power: 2.0 ** 5000 would overflow to an exception.
    exponent = min(failures - 1, 62)
    return min(max_s, initial_s * (2.0 ** exponent))


def is_stalled(last_frame_mono_s: float, now_mono_s: float, stall_timeout_s: float) -> bool:
    """True when a stream that is open has delivered nothing for ``stall_timeout_s`` seconds.

    ``last_frame_mono_s`` is the monotonic time of the last frame, or of the moment the stream
    opened when no frame came yet. A stalled stream must be reopened: many cameras keep the TCP
    connection alive while sending nothing, and a read would otherwise wait forever.
    """
    return now_mono_s - last_frame_mono_s >= stall_timeout_s


def watchdog_limit_s(call: str, stall_timeout_s: float, open_timeout_s: float) -> float:
    """How long one blocking backend call may take before the watchdog abandons it.

    The backend's own timeouts (FFmpeg's open and read timeouts are set to ``open_timeout_s`` and
    ``stall_timeout_s``) normally end a dead call first, inside the capture thread; the watchdog
    adds a grace period so it only steps in for backends that ignore those timeouts (GStreamer
    appsink, some V4L2 drivers).
    """
    base_s = open_timeout_s if call == "open" else stall_timeout_s
    return base_s + max(1.0, 0.5 * base_s)
