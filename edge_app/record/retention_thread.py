"""Retention as the device runs it: the thread ``record:retention`` applies ``record.retain`` every minute."""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable, List

from edge_app.config.schema_record import RecordRetainConfig
from edge_app.record.retention import MB, RetentionPlan, RetentionPolicy

if TYPE_CHECKING:  # the store imports PyAV, which only an appliance that records loads
    from edge_app.record.store import RecordingStore

log = logging.getLogger(__name__)

RETENTION_INTERVAL_S = 60.0


def retention_policy(retain: RecordRetainConfig) -> RetentionPolicy:
    return RetentionPolicy(events_days=retain.events_days, continuous_days=retain.continuous_days,
                           max_disk_percent=retain.max_disk_percent,
                           max_bytes=None if retain.max_gb is None else int(retain.max_gb * 1e9),
                           reserve_bytes=retain.reserve_mb * MB)


class RetentionThread:
    """Deletes what the policy says must go, at start and every ``interval_s``; events whose every
    clip part went are told to ``on_clips_lost``."""

    def __init__(self, store: "RecordingStore", policy: RetentionPolicy,
                 on_clips_lost: Callable[[List[str]], None], interval_s: float = RETENTION_INTERVAL_S) -> None:
        self._store = store
        self.policy = policy  # a configuration change replaces it; the next run applies it
        self._on_clips_lost = on_clips_lost
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="record:retention", daemon=True)

    def start(self) -> "RetentionThread":
        self._thread.start()
        return self

    def run_once(self) -> RetentionPlan:
        plan = self._store.enforce_retention(self.policy)
        if plan.events_without_clip:
            try:
                self._on_clips_lost(plan.events_without_clip)
            except Exception:  # a listener's bug must not stop retention
                log.exception("on_clips_lost listener failed")
        return plan

    def _loop(self) -> None:
        while True:  # at start too: the limits may have changed, or the disk filled, while it was off
            try:
                self.run_once()
            except Exception:  # retention runs again next time; recording goes on meanwhile
                log.exception("recording retention failed")
            if self._stop.wait(self._interval_s):
                return

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
