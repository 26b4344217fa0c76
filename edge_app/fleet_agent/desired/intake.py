"""What a ``R/config/desired`` message costs before anything reads it: a length and a token.

Runs on paho's network thread for every message on the topic, so it must stay cheap whatever
arrives: a message over ``MAX_DESIRED_BYTES`` or beyond the rate of a token bucket
(``RATE_PER_S`` sustained, ``BURST`` at once; the fleet sends one message per change) is dropped
unread and counted as a refusal. What passes is queued for the agent's thread, which checks for a
signature before parsing (``edge_app.fleet_agent.desired.gate``).

A legitimate message may be among those dropped in a flood. The fleet service publishes its
desired message retained, so once the bucket is full again after a drop, :meth:`refetch_due`
says so once: subscribing to the topic again makes the broker hand over the retained message.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from edge_app.config.file import Problem
from edge_app.fleet_agent.desired.config import MAX_DESIRED_BYTES

#: Desired messages acted on per second, sustained.
RATE_PER_S = 1.0
#: Desired messages acted on at once, after a quiet while.
BURST = 10


class TokenBucket:
    """``take()`` is True at most ``burst`` times at once and ``rate_per_s`` times a second after that."""

    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate_per_s = rate_per_s
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._at_s = clock()

    def _refill(self) -> None:
        now_s = self._clock()
        self._tokens = min(self._burst, self._tokens + (now_s - self._at_s) * self._rate_per_s)
        self._at_s = now_s

    def take(self) -> bool:
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def full(self) -> bool:
        self._refill()
        return self._tokens >= self._burst


class DesiredIntake:
    """Admits desired messages to the agent's queue, or says why not (a :class:`Problem`)."""

    def __init__(self, rate_per_s: float = RATE_PER_S, burst: int = BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._bucket = TokenBucket(rate_per_s, burst, clock)
        self._rate_per_s = rate_per_s
        self._dropped_for_rate = False

    def refusal(self, payload: bytes) -> Optional[Problem]:
        """None when ``payload`` may be queued; else why it is dropped unread."""
        if len(payload) > MAX_DESIRED_BYTES:
            return Problem("", f"the message is {len(payload)} bytes, more than the {MAX_DESIRED_BYTES} allowed")
        with self._lock:
            if self._bucket.take():
                return None
            self._dropped_for_rate = True
        return Problem("", f"more than {self._rate_per_s:g} desired messages a second: dropped unread")

    def refetch_due(self) -> bool:
        """True once after messages were dropped for the rate, when the bucket has filled up again."""
        with self._lock:
            if self._dropped_for_rate and self._bucket.full():
                self._dropped_for_rate = False
                return True
            return False


__all__ = ["BURST", "DesiredIntake", "RATE_PER_S", "TokenBucket"]
