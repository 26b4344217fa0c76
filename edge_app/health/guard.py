"""Readers run with a deadline: a hung sysfs file or a blocked NVML costs one figure, never the sampler.

Each reader of a sample runs in a short-lived daemon thread (``health:read-<name>``); the
sampler waits for all of them until one shared deadline. A reader still running then is
reported ``unavailable: timed out`` and is not started again while that call is still stuck:
a read that never returns leaves one thread behind, not one per sample.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from edge_app.health.report import unavailable

log = logging.getLogger(__name__)


@dataclass
class _Call:
    thread: threading.Thread
    started_mono_s: float
    done: threading.Event
    result: Any = None


class GuardedReaders:
    """Runs named readers concurrently, each result or ``unavailable: <why>``."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._stuck: Dict[str, _Call] = {}
        self.timeouts = 0  # calls given up on so far

    def run(self, readers: Dict[str, Callable[[], Any]]) -> Dict[str, Any]:
        results: Dict[str, Any] = {}
        calls: Dict[str, _Call] = {}
        start_s = time.monotonic()
        for name, reader in readers.items():
            stuck = self._stuck.get(name)
            if stuck is not None:
                if not stuck.done.is_set():
                    results[name] = unavailable(f"timed out (stuck for {start_s - stuck.started_mono_s:.0f} s)")
                    continue
                del self._stuck[name]
                log.info("health reader %s returned after being stuck", name)
            calls[name] = self._start(name, reader)
        deadline_s = start_s + self.timeout_s
        for name, call in calls.items():
            if call.done.wait(max(0.0, deadline_s - time.monotonic())):
                results[name] = call.result
            else:
                self._stuck[name] = call
                self.timeouts += 1
                log.warning("health reader %s did not answer within %.1f s; reported unavailable until it does",
                            name, self.timeout_s)
                results[name] = unavailable(f"timed out after {self.timeout_s:g} s")
        return results

    @staticmethod
    def _start(name: str, reader: Callable[[], Any]) -> _Call:
        call = _Call(thread=None, started_mono_s=time.monotonic(), done=threading.Event())  # type: ignore[arg-type]

        def target() -> None:
            try:
                call.result = reader()
            except Exception as err:  # a reader's failure is that figure's "why", not the sampler's end
                log.debug("health reader %s failed", name, exc_info=True)
                call.result = unavailable(f"{type(err).__name__}: {err}")
            finally:
                call.done.set()

        call.thread = threading.Thread(target=target, name=f"health:read-{name}", daemon=True)
        call.thread.start()
        return call

    def stuck(self) -> Optional[str]:
        """Names of readers still stuck, for the log; None when none is."""
        names = [n for n, c in self._stuck.items() if not c.done.is_set()]
        return ", ".join(names) if names else None
