"""One target's delivery thread, ``notify:<name>``: a bounded queue, retries with exponential backoff.

The analysis thread only ever puts a notification in the queue (never waits): when the queue is
full (a receiver that is down or slow), the notification is dropped and counted. Each delivery
is tried ``1 + retries`` times, waiting ``retry_initial_s``, then twice as long each time.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import urlsplit

from edge_app.config.schema_notify import NotifyTargetConfig
from edge_app.notify.message import HttpRequest, Notification, request_for
from edge_app.notify.transport import DeliveryError, send

log = logging.getLogger(__name__)

#: how often an idle thread looks at its stop flag
_POLL_S = 0.5


@dataclass(frozen=True)
class TargetStatus:
    """A target's deliveries so far (status shows it; no secret, no URL path: an ntfy topic is a password)."""

    name: str
    type: str
    destination: str  # scheme://host[:port]
    sent: int
    failed: int  # given up after every retry
    retried: int  # attempts after a failed one
    dropped: int  # the queue was full
    suppressed_quiet: int  # alerts inside quiet hours
    suppressed_cooldown: int  # alerts within the cooldown of the camera's last notification
    queued: int
    last_delivery_time: Optional[float]  # Unix seconds of the last delivery that succeeded
    last_error: Optional[str]
    last_error_time: Optional[float]


def _destination(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class TargetWorker:
    def __init__(self, target: NotifyTargetConfig, snapshot_of: Callable[[str], Optional[bytes]] = lambda _id: None,
                 transport: Callable[[HttpRequest, float], int] = send, clock: Callable[[], float] = time.time) -> None:
        self.target = target
        self._snapshot_of = snapshot_of
        self._transport = transport
        self._clock = clock
        self._queue: "queue.Queue[Notification]" = queue.Queue(maxsize=target.queue_size)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._counts = {"sent": 0, "failed": 0, "retried": 0, "dropped": 0, "suppressed_quiet": 0,
                        "suppressed_cooldown": 0}
        self._last_delivery_time: Optional[float] = None
        self._last_error: Optional[str] = None
        self._last_error_time: Optional[float] = None
        self._thread = threading.Thread(target=self._run, name=f"notify:{target.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop waiting and retrying; a request in flight ends by its own timeout."""
        self._stop.set()
        self.join(timeout_s)

    def join(self, timeout_s: float) -> None:
        if self._thread.is_alive() and timeout_s > 0:
            self._thread.join(timeout_s)

    def submit(self, notification: Notification) -> bool:
        """Queue ``notification`` without waiting; False (and counted) when the queue is full."""
        try:
            self._queue.put_nowait(notification)
            return True
        except queue.Full:
            self.count("dropped")
            log.warning("notification target %s: queue full, a notification for camera %s is dropped",
                        self.target.name, notification.camera_id)
            return False

    def count(self, what: str) -> None:
        with self._lock:
            self._counts[what] += 1

    def status(self) -> TargetStatus:
        with self._lock:
            return TargetStatus(name=self.target.name, type=self.target.type, destination=_destination(self.target.url),
                                queued=self._queue.qsize(), last_delivery_time=self._last_delivery_time,
                                last_error=self._last_error, last_error_time=self._last_error_time, **self._counts)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                notification = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            try:
                self._deliver(notification)
            except Exception:  # a bug here must not end the thread: later alerts still go out
                log.exception("notification target %s: delivery failed unexpectedly", self.target.name)

    def _deliver(self, notification: Notification) -> None:
        # Read here, not on the analysis thread: the snapshot is a file of the event store.
        snapshot = self._snapshot_of(notification.event_id) if self.target.attach_snapshot else None
        delay_s = self.target.retry_initial_s
        for attempt in range(self.target.retries + 1):
            if attempt:
                if self._stop.wait(delay_s):
                    return
                delay_s *= 2
                self.count("retried")
            request = request_for(self.target, notification, self._clock(), snapshot)
            try:
                self._transport(request, self.target.timeout_s)
            except DeliveryError as err:
                with self._lock:
                    self._last_error, self._last_error_time = str(err), self._clock()
                log.warning("notification target %s: attempt %d of %d failed: %s", self.target.name, attempt + 1,
                            self.target.retries + 1, err)
                continue
            with self._lock:
                self._counts["sent"] += 1
                self._last_delivery_time = self._clock()
            return
        self.count("failed")
