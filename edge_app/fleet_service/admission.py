"""Which devices the fleet keeps, and how much each may send.

Anyone who can publish under the topic prefix can claim any device id, so neither the ids
nor the bytes behind them are trusted: a device id is admitted when it matches a pattern of
``devices.allow`` and fewer than ``devices.max`` devices are stored; everything else is
counted and never stored. Each admitted device has a byte budget per minute
(``ingest.device_bytes_per_min``); what goes over it is dropped until the minute is over.

Only well-formed messages (parsed and checked, :mod:`edge_app.fleet_service.ingest_batch`) are
charged to that budget: anyone can publish junk under a real device's id, and junk that spent
the budget would silence the device's real events. Junk is always dropped, and charged to a
budget of its own per device (``ingest.junk_bytes_per_min``): within it each kind of junk is
logged, beyond it only counted, and ``junk_devices`` names the ids over it this minute.

Both checks run on paho's network thread, in memory: the database is never asked.
"""
from __future__ import annotations

import fnmatch
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

#: Distinct refused ids are remembered up to this many (the count of messages goes on).
MAX_REFUSED_TRACKED = 10_000
BUDGET_WINDOW_S = 60.0
MAX_JUNK_DEVICES_NAMED = 100


@dataclass(frozen=True)
class AdmissionStats:
    """``GET /api/v1/status`` ``admission``: what was kept out."""

    devices: int
    max_devices: int
    refused_messages: int
    refused_devices: int
    over_budget: int
    junk_messages: int = 0
    junk_bytes: int = 0
    junk_over_budget: int = 0
    #: ids whose junk went over ingest.junk_bytes_per_min in the current minute (at most 100 named)
    junk_devices: Tuple[str, ...] = ()


class Admission:
    """Admits device ids by pattern and number, and meters each one's bytes per minute."""

    def __init__(self, allow: List[str], max_devices: int, budget_bytes: int, known: Iterable[str] = (),
                 clock: Callable[[], float] = time.monotonic, junk_budget_bytes: Optional[int] = None):
        self._allow = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in allow)) if allow else None
        self._max = max_devices
        self._budget = budget_bytes
        self._clock = clock
        self._admitted: Set[str] = set(known)
        self._refused: Set[str] = set()
        self._refused_messages = 0
        self._over_budget = 0
        # device id -> (window start, bytes in it); only admitted devices, so it is bounded by max.
        self._spent: Dict[str, tuple] = {}
        self._junk_budget = budget_bytes if junk_budget_bytes is None else junk_budget_bytes
        self._junk_spent: Dict[str, tuple] = {}
        self._junk = {"messages": 0, "bytes": 0, "over_budget": 0}
        self._junk_over: Dict[str, float] = {}  # device id -> when its junk last went over its budget
        self._lock = threading.Lock()

    def allowed(self, device_id: str) -> bool:
        """Whether ``device_id`` matches ``devices.allow`` (stored or not)."""
        return self._allow is not None and self._allow.fullmatch(device_id) is not None

    def admit(self, device_id: str) -> bool:
        """Whether a message of ``device_id`` may be kept; a refusal is counted."""
        with self._lock:
            if device_id in self._admitted:
                return True
            if self.allowed(device_id) and len(self._admitted) < self._max:
                self._admitted.add(device_id)
                return True
            self._refused_messages += 1
            if len(self._refused) < MAX_REFUSED_TRACKED:
                self._refused.add(device_id)
            return False

    @staticmethod
    def _charge(ledger: Dict[str, tuple], device_id: str, size: int, budget: int, now: float) -> bool:
        start, spent = ledger.get(device_id, (now, 0))
        if now - start >= BUDGET_WINDOW_S:
            start, spent = now, 0
        if spent + size > budget:
            ledger[device_id] = (start, spent)
            return False
        ledger[device_id] = (start, spent + size)
        return True

    def admitted(self, device_id: str) -> bool:
        """Whether ``device_id`` is admitted already (nothing is counted or admitted by asking)."""
        with self._lock:
            return device_id in self._admitted

    def forget(self, device_id: str) -> None:
        """A device removed from the inventory: its place under ``devices.max`` is free again."""
        with self._lock:
            self._admitted.discard(device_id)
            self._spent.pop(device_id, None)
            self._junk_spent.pop(device_id, None)
            self._junk_over.pop(device_id, None)

    def spend(self, device_id: str, size: int) -> bool:
        """Whether ``size`` more bytes of a well-formed message of an admitted device fit its budget this minute."""
        now = self._clock()
        with self._lock:
            if self._charge(self._spent, device_id, size, self._budget, now):
                return True
            self._over_budget += 1
            return False

    def junk(self, device_id: str, size: int) -> bool:
        """Count a malformed message of ``size`` bytes (always dropped); False once the device's junk is over its budget."""
        now = self._clock()
        with self._lock:
            self._junk["messages"] += 1
            self._junk["bytes"] += size
            if self._charge(self._junk_spent, device_id, size, self._junk_budget, now):
                return True
            self._junk["over_budget"] += 1
            self._junk_over[device_id] = now
            return False

    def stats(self) -> AdmissionStats:
        now = self._clock()
        with self._lock:
            over = sorted(dev for dev, when in self._junk_over.items() if now - when < BUDGET_WINDOW_S)
            return AdmissionStats(len(self._admitted), self._max, self._refused_messages, len(self._refused),
                                  self._over_budget, self._junk["messages"], self._junk["bytes"],
                                  self._junk["over_budget"], tuple(over[:MAX_JUNK_DEVICES_NAMED]))
