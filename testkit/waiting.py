"""Polling a condition with a deadline."""
from __future__ import annotations

import time
from typing import Any, Callable


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.05) -> Any:
    """The first truthy value of ``condition()`` within ``timeout_s``; AssertionError naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {last!r:.300})")


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.2) -> Any:
    """``wait_for`` at the pace of a subprocess's API: a look every 0.2 s."""
    return wait_for(condition, timeout_s, what, interval_s)


def poll_until(condition: Callable[[], Any], timeout_s: float, interval_s: float = 0.05) -> bool:
    """Whether ``condition()`` turned true within ``timeout_s`` (one last look at the deadline).

    For a measurement that goes on either way and reports a warm-up that never came."""
    deadline_s = time.monotonic() + timeout_s
    while time.monotonic() < deadline_s:
        if condition():
            return True
        time.sleep(interval_s)
    return bool(condition())
