"""Refusals of unauthenticated ``R/config/desired`` messages: counted, logged and reported in bounded numbers.

Anyone on an open broker can send thousands of desired messages a second, and each one is
refused. Were each refusal published (retained, QoS 1, on ``R/config/reported``), the flood on the
way in would become a flood on the way out, spending the outbound queue, the broker's in-flight
window and the fleet's byte budget for this device that real events need. So refusals are
coalesced: the first one after a quiet interval is reported at once, every later one within
``interval_s`` of the last report only counted, and at the end of the interval one report says
how many there were (``"refused": N``) and why the last one was refused. The log gets one line per
``log_every_s`` in the same way.

Thread-safe: refusals are noted on paho's network thread (dropped unread) and on the agent's
thread (refused after the cheap checks); only the agent's thread takes reports to publish.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from edge_app.config.file import Problem
from edge_app.process.log_limit import LogLimiter

log = logging.getLogger(__name__)

#: At most one refusal report per this many seconds on ``R/config/reported``.
REPORT_EVERY_S = 5.0
#: At most one log line about refusals per this many seconds.
LOG_EVERY_S = 60.0


@dataclass(frozen=True)
class RefusalReport:
    """What one coalesced report says: the last refusal's reason and how many refusals it stands for."""

    problem: Problem
    refused: int


class RefusalReports:
    """Counts refusals and hands out at most one report per ``interval_s``."""

    def __init__(self, interval_s: float = REPORT_EVERY_S, log_every_s: float = LOG_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._unreported = 0
        self._last_problem: Optional[Problem] = None
        self._reported_mono_s: Optional[float] = None
        self._log_limiter = LogLimiter(log_every_s, clock=clock)

    def note(self, problem: Problem) -> bool:
        """Count one refusal; logs it when no line was written for ``log_every_s``.

        True when it is the first one since the last report: whoever publishes the reports
        then has one to wait for (the rest of a flood needs no wake-up each).
        """
        with self._lock:
            first = self._unreported == 0
            self._unreported += 1
            self._last_problem = problem
        due, more = self._log_limiter.allow("")
        if due:
            log.warning("desired configuration refused: %s%s", problem,
                        f" ({more} more refused since the last note)" if more else "")
        return first

    def take_due(self) -> Optional[RefusalReport]:
        """The report to publish now, or None: nothing refused since the last one, or too soon."""
        now_mono_s = self._clock()
        with self._lock:
            if not self._unreported or self._last_problem is None:
                return None
            if self._reported_mono_s is not None and now_mono_s - self._reported_mono_s < self._interval_s:
                return None
            report = RefusalReport(self._last_problem, self._unreported)
            self._unreported, self._reported_mono_s = 0, now_mono_s
            return report

    def seconds_until_due(self) -> Optional[float]:
        """How long until a report waiting now may be published; None when none waits."""
        with self._lock:
            if not self._unreported:
                return None
            if self._reported_mono_s is None:
                return 0.0
            return max(0.0, self._interval_s - (self._clock() - self._reported_mono_s))


__all__ = ["LOG_EVERY_S", "REPORT_EVERY_S", "RefusalReport", "RefusalReports"]
