"""The device's recorder: one recording folder, one ``CameraRecorder`` per recorded camera, retention.

``RecordingService`` is what ``edge_app.appliance.recording.RecordingHub`` drives (its ``Recorder``
protocol). At start it opens the folder and makes the index say what the files hold (a crash or
``kill -9`` may have left files the index does not know, or rows without files); then each
camera that the ``record`` section (with the camera's own ``record`` choices) records gets a
``CameraRecorder``, which is also the ``PacketSink`` its capture hands packets to. A thread
``record:retention`` deletes what retention says must go, every ``RETENTION_INTERVAL_S``, and
tells the event record which events lost their last clip part.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Dict, List, Optional

from edge_app.capture.packets import PacketSink
from edge_app.config.schema import AppConfig
from edge_app.config.schema_record import RecordSettings, resolve_record
from edge_app.record.recorder import CameraRecorder
from edge_app.record.retention import MB, RetentionPolicy
from edge_app.record.store import RecordingStore
from edge_app.record.types import CameraRecordingStatus, ClipInfo, RecordingReader

log = logging.getLogger(__name__)

RETENTION_INTERVAL_S = 60.0
#: how long shutdown waits for each camera's recorder to finish its files (they stop in parallel)
STOP_TIMEOUT_S = 2.0
GB = 1_000_000_000
MAX_EVENTS_KNOWN = 1000


def settings_of(config: AppConfig) -> Dict[str, RecordSettings]:
    """The recording settings of every enabled camera that records something."""
    found = {}
    for camera in config.cameras:
        settings = resolve_record(config.record, camera.id, getattr(camera, "record", None))
        if camera.enabled and settings.any_enabled:
            found[camera.id] = settings
    return found


def policy_of(config: AppConfig) -> RetentionPolicy:
    retain = config.record.retain
    return RetentionPolicy(events_days=retain.events_days, continuous_days=retain.continuous_days,
                           max_disk_percent=retain.max_disk_percent,
                           max_bytes=None if retain.max_gb is None else int(retain.max_gb * GB),
                           reserve_bytes=int(retain.reserve_mb) * MB)


class RecordingService:
    """Implements ``edge_app.appliance.recording.Recorder`` for the whole device."""

    def __init__(self, config: AppConfig, on_clip: Callable[[ClipInfo], None],
                 on_clips_removed: Callable[[List[str]], None] = lambda event_ids: None,
                 retention_interval_s: float = RETENTION_INTERVAL_S) -> None:
        self._on_clip = on_clip
        self._on_clips_removed = on_clips_removed
        self._lock = threading.Lock()
        self._store = RecordingStore(Path(config.record.dir))
        self._store.reconcile()  # before anything writes: the files are the truth
        self._policy = policy_of(config)
        self._settings: Dict[str, RecordSettings] = {}
        self._recorders: Dict[str, CameraRecorder] = {}
        # recent events' cameras: the end and a deletion go to the recorder that writes the clip
        self._event_cameras: "OrderedDict[str, str]" = OrderedDict()
        self._stop = threading.Event()
        self.configure(config)
        self._retention = threading.Thread(target=self._retain_loop, args=(retention_interval_s,),
                                           name="record:retention", daemon=True)
        self._retention.start()

    # -- configuration ------------------------------------------------------------------------------
    def configure(self, config: AppConfig) -> None:
        wanted = settings_of(config)
        reserve_bytes = int(config.record.retain.reserve_mb) * MB
        with self._lock:
            self._policy = policy_of(config)
            gone = [cid for cid in self._recorders if cid not in wanted]
            stopping = [self._recorders.pop(cid) for cid in gone]
            for camera_id, settings in wanted.items():
                recorder = self._recorders.get(camera_id)
                if recorder is None:
                    self._recorders[camera_id] = CameraRecorder(
                        self._store, settings, reserve_bytes=reserve_bytes, on_clip=self._on_clip).start()
                else:
                    recorder.reserve_bytes = reserve_bytes
                    if settings != self._settings.get(camera_id):
                        recorder.update(settings)
            self._settings = wanted
        _stop_all(stopping)

    def records(self, camera_id: str) -> bool:
        return camera_id in self._settings

    def sink(self, camera_id: str) -> PacketSink:
        return self._recorders[camera_id]

    # -- events ---------------------------------------------------------------------------------------
    def event_started(self, event_id: str, camera_id: str, start_ts: float) -> None:
        with self._lock:
            recorder = self._recorders.get(camera_id)
            if recorder is not None:
                self._event_cameras[event_id] = camera_id
                while len(self._event_cameras) > MAX_EVENTS_KNOWN:
                    self._event_cameras.popitem(last=False)
        if recorder is not None:
            recorder.event_started(event_id, camera_id, start_ts)

    def event_ended(self, event_id: str, end_ts: float) -> None:
        with self._lock:
            recorder = self._recorders.get(self._event_cameras.get(event_id, ""))
        if recorder is not None:
            recorder.event_ended(event_id, end_ts)

    def event_deleted(self, event_id: str) -> None:
        """Its clip goes: through the camera's recorder (which closes the file if it still writes
        it), or straight from the folder for an older event."""
        with self._lock:
            recorder = self._recorders.get(self._event_cameras.pop(event_id, ""))
        if recorder is not None:
            recorder.event_deleted(event_id)
        else:
            self._store.delete_event(event_id)

    # -- reads ---------------------------------------------------------------------------------------
    def statuses(self) -> List[CameraRecordingStatus]:
        return [recorder.status() for recorder in list(self._recorders.values())]

    def reader(self) -> RecordingReader:
        return self._store

    # -- retention and shutdown ------------------------------------------------------------------------
    def retain_now(self) -> None:
        with self._lock:
            policy = self._policy
        try:
            plan = self._store.enforce_retention(policy)
        except Exception:  # an unreadable disk now must not end retention for good
            log.exception("recording retention failed")
            return
        if plan.events_without_clip:
            self._on_clips_removed(list(plan.events_without_clip))

    def _retain_loop(self, interval_s: float) -> None:
        while True:
            self.retain_now()
            if self._stop.wait(interval_s):
                return

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            stopping, self._recorders = list(self._recorders.values()), {}
            self._settings = {}
        _stop_all(stopping)
        self._retention.join(STOP_TIMEOUT_S)
        self._store.close()


def _stop_all(recorders: List[CameraRecorder]) -> None:
    """Finish every file of ``recorders``, in parallel (a slow disk costs one timeout, not one each)."""
    threads = [threading.Thread(target=r.stop, kwargs={"timeout_s": STOP_TIMEOUT_S}, name=f"record:{r.camera_id}:stop")
               for r in recorders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(STOP_TIMEOUT_S + 0.5)


def recording_service(config: AppConfig, on_clip: Callable[[ClipInfo], None],
                      on_clips_removed: Callable[[List[str]], None]) -> Optional[RecordingService]:
    """The ``RecorderFactory`` of ``edge-app run``: None while nothing is recorded and no recordings
    exist (a later configuration change that records a camera starts it); a folder of earlier
    recordings keeps its retention and read side even with recording off."""
    if not settings_of(config) and not Path(config.record.dir).exists():
        return None
    return RecordingService(config, on_clip, on_clips_removed)
