"""Noticing that another client keeps taking this client's MQTT session over.

A broker that does not bind client ids to logins lets any client connect with another's client
id: the broker then closes the first connection and hands its session (and the messages queued
for it) to the newcomer. Both reconnect on their own, so they take turns: the loop looks like
connections that the broker accepts and closes again, over and over. A network outage or a
broker restart closes a connection once, and the reconnects that follow fail until it is back;
paho's own keepalive timeout is not the broker's doing. So a close by the broker of a connection
it had accepted is counted (MQTT 5 names it "Session taken over"; MQTT 3.1.1, which the appliance
and the fleet service speak, just closes the socket), and ``TAKEOVER_CLOSES`` of them within
``TAKEOVER_WINDOW_S`` are reported as a takeover loop: a warning in the appliance's status,
selftest and ``/metrics``, and in the fleet service's status. Pure logic, times passed in; a
module of its own at the top of the package because both the appliance's MQTT client and the
fleet service's use it, and the fleet service does not import the appliance's MQTT package.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Optional

TAKEOVER_WINDOW_S = 120.0
TAKEOVER_CLOSES = 3
#: paho's names for closes that are not the broker's doing
_NOT_BY_BROKER = frozenset({"Success", "Normal disconnection", "Keep alive timeout"})


@dataclass(frozen=True)
class TakeoverReport:
    closes_total: int  # accepted connections the broker closed since the start
    closes_in_window: int  # ... within the last TAKEOVER_WINDOW_S
    warning: Optional[str]  # set while closes_in_window reaches TAKEOVER_CLOSES


class TakeoverWatch:
    """Counts connections the broker closed after accepting them; thread-safe."""

    def __init__(self, client_id: str, window_s: float = TAKEOVER_WINDOW_S, closes: int = TAKEOVER_CLOSES) -> None:
        self._client_id = client_id
        self._window_s = window_s
        self._closes = closes
        self._lock = threading.Lock()
        self._recent: Deque[float] = deque()
        self._total = 0

    def closed(self, now_s: float, reason_code: Any) -> bool:
        """An accepted connection was lost for ``reason_code``; True when this close makes it a loop."""
        if str(reason_code) in _NOT_BY_BROKER:
            return False
        with self._lock:
            self._total += 1
            self._recent.append(now_s)
            self._forget(now_s)
            return len(self._recent) == self._closes

    def report(self, now_s: float) -> TakeoverReport:
        with self._lock:
            self._forget(now_s)
            recent, total = len(self._recent), self._total
        warning = None
        if recent >= self._closes:
            warning = (f"the MQTT broker closed this client's connection {recent} times within {self._window_s:.0f} s "
                       f"right after accepting it: another client is probably connecting with the same client id "
                       f"{self._client_id!r} and taking its session over; bind client ids to logins "
                       f"(Mosquitto: use_username_as_clientid true, docs/fleet.md)")
        return TakeoverReport(total, recent, warning)

    def _forget(self, now_s: float) -> None:
        while self._recent and now_s - self._recent[0] > self._window_s:
            self._recent.popleft()


__all__ = ["TAKEOVER_CLOSES", "TAKEOVER_WINDOW_S", "TakeoverReport", "TakeoverWatch"]
