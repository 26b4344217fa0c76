"""Polling a condition with a deadline, for the fleet tests."""
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
