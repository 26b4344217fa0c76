"""Keeping the log lines of a flood (wrong tokens, refused messages, a failing callback) from
flooding the journal: at most one line per key and interval, the next one saying how many were left out.

Bounded in memory however many keys (client addresses, say) an attacker cycles through.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Tuple


class LogLimiter:
    """At most one log line per key and interval; the next one says how many were left out."""

    def __init__(self, interval_s: float = 60.0, max_keys: int = 4096, clock: Callable[[], float] = time.monotonic):
        self._interval_s = interval_s
        self._max_keys = max_keys
        self._clock = clock
        self._state: "OrderedDict[str, Tuple[float, int]]" = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: str) -> Tuple[bool, int]:
        """(whether to log now, how many lines for ``key`` were suppressed since the last one)."""
        now = self._clock()
        with self._lock:
            last_at, suppressed = self._state.pop(key, (None, 0))
            if last_at is not None and now - last_at < self._interval_s:
                self._state[key] = (last_at, suppressed + 1)
                return False, 0
            self._state[key] = (now, 0)
            while len(self._state) > self._max_keys:
                self._state.popitem(last=False)
            return True, suppressed
