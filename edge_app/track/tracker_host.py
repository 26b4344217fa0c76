"""One tracker child process, seen from the appliance: started on the first request, given up
when it exits or stops answering, and started afresh on the next."""
from __future__ import annotations

import logging
import multiprocessing
import threading
from typing import Any, Optional, Tuple

from edge_app.track.tracker_child import child_main

log = logging.getLogger(__name__)

PROCESS_NAME = "edge-app-tracker"
START_TIMEOUT_S = 60.0   # a spawned child imports numpy and the tracker first: slow on a Jetson's SD card
ANSWER_TIMEOUT_S = 10.0  # one update takes milliseconds; ten seconds is a child that hangs


class TrackerUnavailable(RuntimeError):
    """The tracker's child process exited or stopped answering; the next request starts a new one."""


class TrackerHost:
    """One child process holding the trackers of some cameras; started on the first request."""

    def __init__(self, index: int, start_timeout_s: float = START_TIMEOUT_S,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        self.index = index
        self._start_timeout_s = start_timeout_s
        self._answer_timeout_s = answer_timeout_s
        self._answered = False  # whether the current child has answered a request yet
        self._lock = threading.Lock()  # one request at a time: lanes whose cameras share a child take turns
        self._process: Optional[Any] = None
        self._conn: Optional[Any] = None
        #: counts the children started; a tracker made in an earlier one must be made again
        self.generation = 0
        self.restarts = 0
        self._closed = False

    @property
    def pid(self) -> Optional[int]:
        return None if self._process is None else self._process.pid

    def request(self, generation: int, message: tuple, start: bool = True) -> Tuple[int, Any]:
        """Send ``message`` and wait for its answer: ``(generation, answer)``. With a child
        newer than ``generation`` nothing is sent: the answer is None and the caller makes
        its tracker again; so too without a child when ``start`` is false. Raises
        ``TrackerUnavailable`` (the child is given up) or ``ValueError`` (the child refused
        the request)."""
        with self._lock:
            if self._closed:
                raise TrackerUnavailable("the tracker processes are stopped")
            if self._process is None:
                if not start:
                    return self.generation, None
                self._start()
            if generation != self.generation:
                return self.generation, None
            conn = self._conn
            try:
                conn.send(message)
                # A new child answers its first request only once it has imported numpy and the tracker.
                wait_s = self._answer_timeout_s if self._answered else self._start_timeout_s
                if not conn.poll(wait_s):
                    raise TrackerUnavailable(f"tracker process {self.pid} did not answer in {wait_s:.0f} s")
                status, answer = conn.recv()
                self._answered = True
            except (EOFError, OSError, ValueError) as exc:
                self._give_up()
                raise TrackerUnavailable(f"tracker process exited ({type(exc).__name__}: {exc})") from exc
            except TrackerUnavailable:
                self._give_up()
                raise
        if status == "error":
            raise ValueError(answer)
        return generation, answer

    def close(self, timeout_s: float) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                try:
                    self._conn.send(("stop",))
                except (OSError, ValueError):
                    pass
            self._stop_process(timeout_s)

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # never fork a process with threads
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=child_main, args=(child_conn,), name=f"{PROCESS_NAME}-{self.index}",
                                        daemon=True)
        self._process.start()
        child_conn.close()
        self.generation += 1
        self._answered = False
        log.info("tracker process %d started (pid %s)", self.index, self._process.pid)

    def _give_up(self) -> None:
        log.warning("tracker process %d (pid %s) given up; its cameras' tracks start over", self.index, self.pid)
        self.restarts += 1
        self._stop_process(1.0)

    def _stop_process(self, timeout_s: float) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is not None:
            process.join(timeout_s)
            if process.is_alive():
                process.kill()
                process.join(1.0)
        if conn is not None:
            conn.close()
