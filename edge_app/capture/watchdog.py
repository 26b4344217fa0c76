"""The stall watchdog of a camera's capture thread: the backend call in progress, and the capture
threads abandoned in one (``CameraWorker`` acts on what it finds).

Why a watchdog thread
    FFmpeg sources (RTSP, HTTP, files) get open and read timeouts, so a dead stream makes the
    capture thread's own ``read`` fail after ``stall_timeout_s`` and it reconnects by itself. Other
    backends (GStreamer appsink, some V4L2 drivers) can block inside one C call forever, and no
    Python code can interrupt that. When one backend call has been running past
    ``watchdog_limit_s``, the watchdog abandons that thread: it bumps the worker's *generation*,
    renames the stuck thread ``capture:<camera_id>:abandoned`` and starts a fresh capture thread.
    The stuck thread notices it is stale when (if ever) its call returns, releases its capture
    object and exits without touching the worker. Every side effect is checked against the
    generation under the worker's lock, so a stale thread can never publish a frame or a state.
    At most ``MAX_ABANDONED`` stuck threads are kept alive per camera; beyond that the camera
    waits in ``reconnecting`` until one of them returns.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, List, Optional

from edge_app.capture.backoff import watchdog_limit_s
from edge_app.config.schema import CaptureConfig
from edge_app.process.stall import stalled

logger = logging.getLogger(__name__)

MAX_ABANDONED = 3


@dataclass(frozen=True)
class BackendCall:
    """A backend call in progress on the current capture thread (for the watchdog)."""

    generation: int
    kind: str  # "open" | "read"
    started_mono_s: float


class BackendCalls:
    """The call in progress and the abandoned threads of one camera; the worker's lock guards it."""

    def __init__(self, capture: CaptureConfig) -> None:
        self._capture = capture
        self.current: Optional[BackendCall] = None
        self._abandoned: List[threading.Thread] = []

    def stalled(self, generation: int, now_mono_s: float) -> Optional[BackendCall]:
        """The call of ``generation`` when it has run past its limit, else None."""
        call = self.current
        if call is None or call.generation != generation:
            return None
        limit_s = watchdog_limit_s(call.kind, self._capture.stall_timeout_s, self._capture.open_timeout_s)
        return call if stalled(now_mono_s, call.started_mono_s, limit_s) else None

    def abandon(self, stuck: Optional[threading.Thread], name: str) -> None:
        """Leave ``stuck`` behind (renamed ``name``) until its call returns, if ever."""
        if stuck is not None:
            stuck.name = name
            self._abandoned.append(stuck)
        self.current = None

    def room_for_another(self) -> bool:
        """Whether a fresh capture thread may start: fewer than ``MAX_ABANDONED`` are still stuck."""
        self._abandoned = [t for t in self._abandoned if t.is_alive()]
        return len(self._abandoned) < MAX_ABANDONED


def watch(camera_id: str, stall_timeout_s: float, stop_event: threading.Event, check: Callable[[], None]) -> None:
    """The watchdog thread: ``check`` a few times per stall timeout until ``stop_event`` is set."""
    period_s = max(0.05, min(1.0, stall_timeout_s / 4))
    while not stop_event.wait(period_s):
        try:
            check()
        except Exception:
            logger.exception("camera %s: watchdog check failed", camera_id)
