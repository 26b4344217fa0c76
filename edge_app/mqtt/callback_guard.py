"""One guard around every paho callback: no exception ever reaches paho's network thread.

paho re-raises what a callback raises (unless ``suppress_exceptions`` is set), which ends
``loop_forever`` and with it the network thread: nothing is read again, no PUBACK, no PINGREQ,
and the broker soon publishes the last will while the appliance still believes it is connected.
Inbound messages are chosen by whoever can publish on the broker, so a handler that raises on
one of them must cost that message only. Every exception caught is counted per callback, and
logged with its traceback at most once every ``log_every_s`` per callback, with the number of
failures not logged since, so a flood of bad messages cannot fill the log.
"""
from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any, Callable, Dict, Mapping

from edge_app.process.log_limit import LogLimiter

log = logging.getLogger(__name__)

LOG_EVERY_S = 60.0


class CallbackGuard:
    """Wraps callbacks so they never raise; counts and rate-limits the logging of what they raised."""

    def __init__(self, log_every_s: float = LOG_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._errors: Dict[str, int] = {}
        self._log_limiter = LogLimiter(log_every_s, clock=clock)

    def wrap(self, name: str, callback: Callable[..., Any]) -> Callable[..., None]:
        @functools.wraps(callback)
        def guarded(*args: Any, **kwargs: Any) -> None:
            try:
                callback(*args, **kwargs)
            except Exception as err:  # anything, RecursionError included: paho must never see it
                self.caught(name, err)
        return guarded

    def install(self, client: Any, callbacks: Mapping[str, Callable[..., Any]]) -> None:
        """Set each ``client.<name> = callback``, guarded; e.g. ``{"on_message": handler}``."""
        for name, callback in callbacks.items():
            setattr(client, name, self.wrap(name, callback))

    def caught(self, name: str, err: BaseException) -> None:
        with self._lock:
            self._errors[name] = self._errors.get(name, 0) + 1
            total = self._errors[name]
        allowed, unlogged = self._log_limiter.allow(name)
        if not allowed:
            return
        try:
            since = f", {unlogged} more not logged since the last report" if unlogged else ""
            log.error("MQTT %s handler failed (%d failures so far%s): %s: %s", name, total, since,
                      type(err).__name__, str(err)[:300], exc_info=err)
        except Exception:  # a traceback that cannot be formatted (RecursionError) must not escape either
            log.error("MQTT %s handler failed (%d failures so far): %s", name, total, type(err).__name__)

    def errors(self) -> Dict[str, int]:
        """``{callback name: exceptions caught}``, only callbacks that raised."""
        with self._lock:
            return dict(self._errors)
