"""Slowing down token guessing (its log lines are kept from flooding the journal by
:class:`edge_app.process.log_limit.LogLimiter`).

Keyed by the client's address (the socket's, never a forwarded-for header a client could make
up) and bounded in memory however many addresses a LAN attacker cycles through.
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable, Deque, Optional


@dataclass(frozen=True)
class ThrottlePolicy:
    max_failures: int = 10  # wrong tokens per window before the client is refused
    window_s: float = 60.0
    max_clients: int = 4096  # addresses remembered; the least recently failing are forgotten


class FailureThrottle:
    """Counts failures per client in a sliding window; a client at the limit waits it out."""

    def __init__(self, policy: ThrottlePolicy = ThrottlePolicy(), clock: Callable[[], float] = time.monotonic):
        self._policy = policy
        self._clock = clock
        self._failures: "OrderedDict[str, Deque[float]]" = OrderedDict()
        self._lock = threading.Lock()

    @property
    def policy(self) -> ThrottlePolicy:
        return self._policy

    def retry_after_s(self, client: str) -> Optional[int]:
        """Whole seconds until ``client`` may try again, or None when it may try now."""
        with self._lock:
            times = self._failures.get(client)
            if times is None:
                return None
            self._forget_old(times)
            if len(times) < self._policy.max_failures:
                return None
            return max(1, math.ceil(times[0] + self._policy.window_s - self._clock()))

    def record_failure(self, client: str) -> bool:
        """Note a failure; True when this one brought ``client`` to the limit."""
        with self._lock:
            times = self._failures.pop(client, None) or deque(maxlen=self._policy.max_failures)
            self._failures[client] = times  # most recently failing last
            self._forget_old(times)
            times.append(self._clock())
            while len(self._failures) > self._policy.max_clients:
                self._failures.popitem(last=False)
            return len(times) == self._policy.max_failures

    def _forget_old(self, times: Deque[float]) -> None:
        horizon = self._clock() - self._policy.window_s
        while times and times[0] <= horizon:
            times.popleft()
