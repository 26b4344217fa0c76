"""Every thread's stack in the log on SIGUSR1, while the appliance runs on.

A service that stalls or will not stop is looked into with ``systemctl kill -s USR1 edge-app``.
faulthandler's dump stops at 100 threads, newest first, and the appliance runs more than that
(the HTTP server's pool alone), so the main thread, the one that matters for a stop, would be
left out. Here a thread of its own takes the signal with ``sigwait`` (it is blocked everywhere
else, as the stop signals are) and logs the main thread first, then the others by name.
"""
from __future__ import annotations

import logging
import signal
import sys
import threading
import traceback
from typing import List

log = logging.getLogger(__name__)

DUMP_SIGNAL = signal.SIGUSR1


def block_dump_signal() -> None:
    """Call on the main thread before any other thread starts: they all inherit the block."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {DUMP_SIGNAL})


def format_stacks() -> str:
    """The stack of every Python thread, the main thread first."""
    frames = sys._current_frames()
    threads = sorted(threading.enumerate(), key=lambda t: (t is not threading.main_thread(), t.name))
    parts: List[str] = []
    for thread in threads:
        frame = frames.get(thread.ident) if thread.ident is not None else None
        if frame is None:
            continue
        stack = "".join(traceback.format_stack(frame))
        parts.append(f"thread {thread.name} (0x{thread.ident:x}{', daemon' if thread.daemon else ''}):\n{stack}")
    return "\n".join(parts)


def start_stack_dumps() -> threading.Thread:
    """The thread that logs every thread's stack each time the process gets SIGUSR1."""
    def watch() -> None:
        while True:
            signal.sigwait({DUMP_SIGNAL})
            log.warning("SIGUSR1: the stacks of all %d threads, main thread first\n%s",
                        threading.active_count(), format_stacks())

    thread = threading.Thread(target=watch, name="stack-dump", daemon=True)
    thread.start()
    return thread
