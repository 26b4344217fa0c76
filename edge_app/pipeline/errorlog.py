"""Rate-limited error logging for loops that must keep going after an exception.

A loop that fails on every frame would otherwise write a traceback 30 times a second and fill
the disk of a box nobody looks at. The first failure of a kind is logged with its traceback;
repeats of that kind are counted and summarised at most once per ``interval_s``.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, Optional


@dataclass
class _Kind:
    last_logged_s: float
    suppressed: int = 0


class RateLimitedErrorLog:
    """``exception(kind, message, *args)`` from inside an ``except`` block, any thread."""

    def __init__(self, logger: logging.Logger, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self._logger = logger
        self.interval_s = interval_s
        self._clock = clock
        self._kinds: Dict[str, _Kind] = {}
        self._lock = threading.Lock()
        self.total = 0
        self.last_message: Optional[str] = None

    def exception(self, kind: str, message: str, *args: object) -> bool:
        """Log the current exception unless ``kind`` was logged within ``interval_s``; True if logged."""
        now_s = self._clock()
        with self._lock:
            self.total += 1
            self.last_message = message % args if args else message
            seen = self._kinds.get(kind)
            if seen is not None and now_s - seen.last_logged_s < self.interval_s:
                seen.suppressed += 1
                return False
            suppressed = seen.suppressed if seen is not None else 0
            self._kinds[kind] = _Kind(now_s)
        if suppressed:
            self._logger.error(message + " (and %d more times in the last %.0f s)", *args, suppressed,
                               self.interval_s, exc_info=True)
        else:
            self._logger.error(message, *args, exc_info=True)
        return True
