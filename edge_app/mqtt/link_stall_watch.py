"""Whether the MQTT link is stalled: pure logic with the time passed in.

The link is stalled when paho's network thread is gone while the publisher runs, or when it
is connected, messages wait for the broker, and nothing has moved (no acknowledgement, no
inbound message, no connect) for ``stall_after_s``. A broker that is away is not a stall: the
publisher is then disconnected and paho reconnects on its own. paho closes a link that stopped
answering after 1.5 x keepalive, so twice the keepalive without progress while connected means
the network thread itself is not doing its work (stuck in a callback, say). A stall is reported
by ``/api/v1/status``, ``/readyz``, ``/metrics`` and the systemd STATUS line, and stops the
watchdog pings, as a stalled pipeline does.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

from edge_app.process.stall import stalled


def stall_after_s_for(keepalive_s: float) -> float:
    """Twice the keepalive: paho gives up on a silent broker before that."""
    return 2.0 * keepalive_s


@dataclass(frozen=True)
class LinkActivity:
    """What the publisher recorded (monotonic seconds); see :class:`LinkTracker`."""

    running: bool  # started and not stopped
    loop_alive: bool  # paho's network thread
    connected: bool
    waiting: int  # messages not yet acknowledged by the broker
    waiting_since_s: Optional[float]  # since when messages wait with nothing moving on the link


@dataclass(frozen=True)
class LinkHealth:
    stalled: bool
    reason: Optional[str]
    stall_after_s: float


def assess_link(activity: LinkActivity, now_s: float, stall_after_s: float) -> LinkHealth:
    if not activity.running:
        return LinkHealth(False, None, stall_after_s)
    if not activity.loop_alive:
        return LinkHealth(True, "the MQTT network thread has stopped", stall_after_s)
    if activity.connected and activity.waiting and stalled(now_s, activity.waiting_since_s, stall_after_s):
        waited_s = now_s - activity.waiting_since_s
        reason = f"no MQTT traffic for {waited_s:.0f} s while {activity.waiting} messages wait for the broker"
        return LinkHealth(True, reason, stall_after_s)
    return LinkHealth(False, None, stall_after_s)


def readiness_reason(health: LinkHealth) -> Optional[str]:
    """The ``/readyz`` reason for a stalled MQTT link, or None."""
    return f"the MQTT link is stalled: {health.reason}" if health.stalled else None


class LinkTracker:
    """When messages started waiting with nothing moving; fed by paho's callbacks and the supervisor."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting_since_s: Optional[float] = None

    def moved(self, now_s: float) -> None:
        """Traffic on the link (an acknowledgement, a message, a connect): the clock starts over."""
        with self._lock:
            if self._waiting_since_s is not None:
                self._waiting_since_s = now_s

    def observe(self, waiting: int, now_s: float) -> Optional[float]:
        """Called regularly with the number of messages waiting; returns ``waiting_since_s``."""
        with self._lock:
            if not waiting:
                self._waiting_since_s = None
            elif self._waiting_since_s is None:
                self._waiting_since_s = now_s
            return self._waiting_since_s
