"""Stop signals that always reach ``edge-app run``, and a process exit that cannot abort.

Python runs signal handlers on the main thread only, and only when the C handler ran: if the
kernel delivers SIGTERM to another thread (CUDA and TensorRT start their own) while the main
thread sleeps in an untimed wait, the handler never runs and the process ignores the signal.
So SIGTERM and SIGINT are blocked in the main thread before any other thread exists (every
thread inherits the block), and the main thread takes them with ``sigtimedwait`` in a loop with
a short timeout, which also lets it notice stop requests from inside the process. A Python
handler stays installed for a thread that unblocks the signals again (native code may).

After the first signal a watcher thread waits for a second one and exits 1 at once, and ends
the process if the stop overruns its budget. A thread still inside OpenCV's open or read when
the interpreter finalises aborts the process ("terminate called without an active
exception", exit 134), so once everything has stopped cleanly the process leaves with
``os._exit`` when such threads remain.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import Callable, Optional, Sequence

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: a stop must be complete within 5 s of the signal (docs/commands.md: systemd's stop, docker stop)
STOP_BUDGET_S = 4.5
EXIT_OK, EXIT_FAILURE = 0, 1


def _flush() -> None:
    for handler in logging.getLogger().handlers:
        try:
            handler.flush()
        except Exception:  # a broken log handler must not keep the process alive
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def exit_now(code: int) -> None:
    """Flush what was logged and end the process without running interpreter shutdown."""
    _flush()
    os._exit(code)


class StopSignals:
    """SIGTERM/SIGINT for the main thread of ``edge-app run`` (see the module doc)."""

    def __init__(self, signals: Sequence[signal.Signals] = STOP_SIGNALS,
                 exit_process: Callable[[int], None] = exit_now):
        self._signals = set(signals)
        self._exit_process = exit_process
        self._received: Optional[int] = None
        self._first: Optional[int] = None

    def install(self) -> None:
        """Block the signals; call on the main thread before any other thread is started."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("stop signals must be installed by the main thread")
        # A signal the parent set to be ignored (SIGINT for `edge-app run &` in a script) stays so.
        self._signals = {s for s in self._signals if signal.getsignal(s) is not signal.SIG_IGN}
        if not self._signals:
            return
        signal.pthread_sigmask(signal.SIG_BLOCK, self._signals)
        for signum in self._signals:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame) -> None:
        # Only reached when a thread that does not block the signal took it.
        if self._first is not None:
            self._second(signum)
        if self._received is None:
            self._received = signum

    def wait(self, timeout_s: float) -> Optional[int]:
        """The stop signal received within ``timeout_s``, or None (main thread only)."""
        if self._received is None:
            info = signal.sigtimedwait(self._signals, max(0.0, timeout_s))
            if info is not None and self._received is None:
                self._received = info.si_signo
        return self._received

    def stopping(self, signum: Optional[int], deadline_mono_s: float) -> None:
        """The stop has begun: from now on a second signal, or overrunning the deadline, ends the process."""
        self._first = signum if signum is not None else 0
        threading.Thread(target=self._watch, args=(deadline_mono_s,), name="stop-watch", daemon=True).start()

    def _watch(self, deadline_mono_s: float) -> None:
        while True:
            remaining_s = deadline_mono_s - time.monotonic()
            if remaining_s <= 0:
                log.error("stopping took longer than %.1f s; exiting without waiting any longer", STOP_BUDGET_S)
                self._exit_process(EXIT_FAILURE)
                return
            info = signal.sigtimedwait(self._signals, min(remaining_s, 0.5))
            if info is not None:
                self._second(info.si_signo)
                return

    def _second(self, signum: int) -> None:
        log.warning("received %s while stopping; exiting now", signal.Signals(signum).name)
        self._exit_process(EXIT_FAILURE)


def finish_process(code: int) -> int:
    """Return ``code`` for a normal exit, or end the process here if threads are still running.

    Daemon threads stuck in native code (a capture still in OpenCV's open, an engine build that
    TensorRT cannot cancel) would run into the interpreter's finalisation and can abort it.
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if not others:
        _flush()
        return code
    log.debug("leaving %d thread(s) behind: %s", len(others), ", ".join(sorted(t.name for t in others)))
    exit_now(code)
    return code  # not reached
