"""The recording side of an appliance: one store, a recorder per camera, retention every minute.

    recordings = Recordings(config.record, on_clips_lost=...)     # reconciles the index first
    sink = recordings.add_camera(config.record_settings("cam1"), on_clip=...)  # a PacketSink
    ...
    recordings.close()                                             # finishes every file
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional

from edge_app.config.schema_record import RecordConfig, RecordRetainConfig, RecordSettings
from edge_app.record.recorder import CameraRecorder
from edge_app.record.retention import MB, RetentionPlan, RetentionPolicy
from edge_app.record.store import RecordingStore
from edge_app.record.types import CameraRecordingStatus, ClipInfo

log = logging.getLogger(__name__)

RETENTION_INTERVAL_S = 60.0


def retention_policy(retain: RecordRetainConfig) -> RetentionPolicy:
    return RetentionPolicy(events_days=retain.events_days, continuous_days=retain.continuous_days,
                           max_disk_percent=retain.max_disk_percent,
                           max_bytes=None if retain.max_gb is None else int(retain.max_gb * 1e9),
                           reserve_bytes=retain.reserve_mb * MB)


class Recordings:
    """Owns the recording store, the cameras' recorders and the retention thread ``record:retention``."""

    def __init__(self, config: RecordConfig, folder: Optional[Path] = None,
                 on_clips_lost: Optional[Callable[[List[str]], None]] = None,
                 retention_interval_s: float = RETENTION_INTERVAL_S) -> None:
        self.config = config
        self.store = RecordingStore(Path(folder or config.dir))
        self.store.reconcile()  # before any writing: the files are the truth after a crash
        self._policy = retention_policy(config.retain)
        self._on_clips_lost = on_clips_lost
        self._recorders: Dict[str, CameraRecorder] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._interval_s = retention_interval_s
        self._thread = threading.Thread(target=self._retain_loop, name="record:retention", daemon=True)
        self._thread.start()

    def add_camera(self, settings: RecordSettings,
                   on_clip: Optional[Callable[[ClipInfo], None]] = None) -> CameraRecorder:
        """Start (or return) the camera's recorder; it is the PacketSink its capture calls."""
        with self._lock:
            recorder = self._recorders.get(settings.camera_id)
            if recorder is None:
                recorder = CameraRecorder(self.store, settings, reserve_bytes=self._policy.reserve_bytes,
                                          on_clip=on_clip).start()
                self._recorders[settings.camera_id] = recorder
            else:
                recorder.update(settings)
            return recorder

    def remove_camera(self, camera_id: str) -> None:
        with self._lock:
            recorder = self._recorders.pop(camera_id, None)
        if recorder is not None:
            recorder.stop()

    def recorder(self, camera_id: str) -> Optional[CameraRecorder]:
        with self._lock:
            return self._recorders.get(camera_id)

    def statuses(self) -> List[CameraRecordingStatus]:
        with self._lock:
            recorders = list(self._recorders.values())
        return [r.status() for r in recorders]

    def enforce_retention(self) -> RetentionPlan:
        plan = self.store.enforce_retention(self._policy)
        if plan.events_without_clip and self._on_clips_lost is not None:
            try:
                self._on_clips_lost(plan.events_without_clip)
            except Exception:  # a listener's bug must not stop retention
                log.exception("on_clips_lost listener failed")
        return plan

    def _retain_loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.enforce_retention()
            except Exception:  # retention runs again next time; recording goes on meanwhile
                log.exception("recording retention failed")

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            recorders, self._recorders = list(self._recorders.values()), {}
        for recorder in recorders:
            recorder.stop()
        self._thread.join(5)
        self.store.close()
