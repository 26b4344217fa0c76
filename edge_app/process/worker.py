"""One named background thread with a stop request: started at most once, stopped as often as asked.

Every long-lived loop of the appliance and the fleet service (a command applier, a sampler, a
watcher) needs the same four things: a daemon thread with a name that shows in ``py-spy`` and
thread dumps, a flag its loop reads to end, a way to wake a loop that sleeps on its own condition or
event, and a join bounded in time so one stuck loop cannot hold up the process's exit.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional


class WorkerThread:
    """Runs ``target`` on a daemon thread named ``name``; the loop ends once :attr:`stopping` is set.

    ``wake`` is called by :meth:`stop` after the flag is set, for a loop that waits on something other
    than :attr:`stopping` (a ``threading.Condition`` to notify, an event to set).
    """

    def __init__(self, target: Callable[[], None], name: str, *, wake: Optional[Callable[[], None]] = None) -> None:
        self._target = target
        self.name = name
        self._wake = wake
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> bool:
        """Start the thread; False (and nothing started) when it was started before or stop was asked."""
        with self._lock:
            if self._thread is not None or self.stopping.is_set():
                return False
            self._thread = threading.Thread(target=self._target, name=self.name, daemon=True)
            self._thread.start()
            return True

    def stop(self, timeout_s: float) -> bool:
        """Ask the loop to end and wait up to ``timeout_s``; True once no thread of this worker runs."""
        self.stopping.set()
        if self._wake is not None:
            self._wake()
        with self._lock:
            thread = self._thread
        if thread is None:
            return True
        if thread is not threading.current_thread():  # a loop that stops its own worker just returns after
            thread.join(timeout_s)
        return not thread.is_alive()

    def is_alive(self) -> bool:
        with self._lock:
            return self._thread is not None and self._thread.is_alive()
