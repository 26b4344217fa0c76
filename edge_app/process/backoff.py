"""How long to wait before trying again: doubling from a first wait up to a longest one.

One rule for every retry loop that counts its waits rather than its failures (a camera's
reconnects count failures and cap by the outage's length: ``edge_app.capture.backoff``).
"""
from __future__ import annotations

from typing import Optional


def next_retry_s(previous_s: Optional[float], first_s: float, max_s: float) -> float:
    """The wait before the next attempt: ``first_s`` at first (``previous_s`` None), then twice the
    previous, never over ``max_s``."""
    return min(first_s if previous_s is None else previous_s * 2, max_s)
