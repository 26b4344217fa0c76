"""Configurations run in rounds (forward, then reversed), a failure recorded instead of ending the run."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Dict, List

log = logging.getLogger(__name__)


def guarded(what: str, measure: Callable[[float], dict], window_s: float, **identity: Any) -> dict:
    """One round of one configuration; a failure is recorded in the results instead of ending the run."""
    try:
        return measure(window_s)
    except Exception as exc:
        log.exception("%s failed", what)
        return {**identity, "status": "error", "error": f"{type(exc).__name__}: {exc}"}


@dataclass
class Job:
    section: str
    what: str
    measure: Callable[[float], dict]
    identity: Dict[str, Any] = field(default_factory=dict)
    rounds: List[dict] = field(default_factory=list)


def run_rounds(jobs: List[Job], rounds: int, window_s: float, retry_errors: bool = True) -> None:
    """Every job once per round, odd rounds in reverse order; ``window_s`` is split over the rounds.

    A skipped configuration (and, without ``retry_errors``, a failed one) is not tried again.
    """
    round_window_s = window_s / rounds
    final = ("skipped",) if retry_errors else ("skipped", "error")
    for index in range(rounds):
        log.info("round %d of %d", index + 1, rounds)
        for job in (jobs if index % 2 == 0 else list(reversed(jobs))):
            job.rounds.append(guarded(job.what, job.measure, round_window_s, **job.identity))
            if job.rounds[-1].get("status") in final:
                job.measure = partial(_repeat, job.rounds[-1])


def _repeat(result: dict, window_s: float) -> dict:
    """A skipped configuration stays skipped without trying again."""
    return result
