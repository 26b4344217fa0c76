"""The device's recorder as the appliance drives it: ``edge_app.record.service.Recordings`` (one
recording folder reconciled at start, a ``CameraRecorder`` per camera, retention on
``record:retention``) fed from the configuration and the events.

``RecordingService`` implements ``edge_app.appliance.recording.Recorder``: it resolves which
cameras the ``record`` section (with each camera's own ``record`` choices) records, adds and
removes their recorders as the configuration changes (each recorder is also the ``PacketSink``
its camera's capture hands packets to), and sends an event's start, end and deletion to the
recorder of the camera that writes its clip.
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
from edge_app.record.service import Recordings
from edge_app.record.types import CameraRecordingStatus, ClipInfo, RecordingReader

log = logging.getLogger(__name__)

#: recently ended events and their cameras: a deletion goes to the recorder that wrote the clip
MAX_EVENTS_KNOWN = 1000
#: open events (started, not ended) are kept until they end; this bound is only against a leak
MAX_OPEN_EVENTS = 100_000


def _remember(known: "OrderedDict[str, str]", event_id: str, camera_id: str, most: int) -> List[str]:
    """Add ``event_id`` to ``known`` (oldest first), forgetting the oldest beyond ``most``; returns those."""
    known[event_id] = camera_id
    forgotten = []
    while len(known) > most:
        forgotten.append(known.popitem(last=False)[0])
    return forgotten


def settings_of(config: AppConfig) -> Dict[str, RecordSettings]:
    """The recording settings of every enabled camera that records something."""
    found = {}
    for camera in config.cameras:
        settings = resolve_record(config.record, camera.id, getattr(camera, "record", None))
        if camera.enabled and settings.any_enabled:
            found[camera.id] = settings
    return found


class RecordingService:
    """Implements ``edge_app.appliance.recording.Recorder`` for the whole device."""

    def __init__(self, config: AppConfig, on_clip: Callable[[ClipInfo], None],
                 on_clips_removed: Callable[[List[str]], None] = lambda event_ids: None) -> None:
        self._on_clip = on_clip
        self._lock = threading.Lock()
        self._recordings = Recordings(config.record, on_clips_lost=on_clips_removed)
        self._settings: Dict[str, RecordSettings] = {}
        # an open event stays known however many newer ones come (its end must reach its recorder);
        # ended ones are remembered for a while for their deletion
        self._open_events: "OrderedDict[str, str]" = OrderedDict()
        self._event_cameras: "OrderedDict[str, str]" = OrderedDict()
        self.configure(config)

    # -- configuration ------------------------------------------------------------------------------
    def configure(self, config: AppConfig) -> None:
        wanted = settings_of(config)
        self._recordings.set_retention(config.record.retain)
        with self._lock:
            before, self._settings = self._settings, wanted
        for camera_id in before:
            if camera_id not in wanted:
                self._recordings.remove_camera(camera_id)  # finishes its files
        for camera_id, settings in wanted.items():
            if settings != before.get(camera_id):
                self._recordings.add_camera(settings, on_clip=self._on_clip)  # adds, or updates its settings

    def records(self, camera_id: str) -> bool:
        return camera_id in self._settings

    def sink(self, camera_id: str) -> PacketSink:
        recorder = self._recordings.recorder(camera_id)
        if recorder is None:
            raise KeyError(f"camera {camera_id} is not recorded")
        return recorder

    # -- events ---------------------------------------------------------------------------------------
    def _ended(self, event_id: str) -> str:
        """The camera of an event that ends; from now on it is remembered for its deletion only."""
        with self._lock:
            camera_id = self._open_events.pop(event_id, "")
            if camera_id:
                _remember(self._event_cameras, event_id, camera_id, MAX_EVENTS_KNOWN)
            return camera_id or self._event_cameras.get(event_id, "")

    def _forget(self, event_id: str) -> str:
        """The camera of a deleted event, open or ended, which is forgotten."""
        with self._lock:
            return self._open_events.pop(event_id, "") or self._event_cameras.pop(event_id, "")

    def event_started(self, event_id: str, camera_id: str, start_ts: float) -> None:
        recorder = self._recordings.recorder(camera_id)
        if recorder is None:
            return
        with self._lock:
            for forgotten in _remember(self._open_events, event_id, camera_id, MAX_OPEN_EVENTS):
                log.warning("more than %d open events: event %s is forgotten by recording", MAX_OPEN_EVENTS, forgotten)
        recorder.event_started(event_id, camera_id, start_ts)

    def event_ended(self, event_id: str, end_ts: float) -> None:
        camera_id = self._ended(event_id)
        recorder = self._recordings.recorder(camera_id) if camera_id else None
        if recorder is not None:
            recorder.event_ended(event_id, end_ts)

    def event_deleted(self, event_id: str) -> None:
        """Its clip goes: through the camera's recorder (which closes the file if it still writes
        it), or straight from the folder for an older event."""
        camera_id = self._forget(event_id)
        recorder = self._recordings.recorder(camera_id) if camera_id else None
        if recorder is not None:
            recorder.event_deleted(event_id)
        else:
            self._recordings.store.delete_event(event_id)

    # -- reads and shutdown ------------------------------------------------------------------------------
    def statuses(self) -> List[CameraRecordingStatus]:
        return self._recordings.statuses()

    def reader(self) -> RecordingReader:
        return self._recordings.store

    def close(self) -> None:
        self._recordings.close()


def recording_service(config: AppConfig, on_clip: Callable[[ClipInfo], None],
                      on_clips_removed: Callable[[List[str]], None]) -> Optional[RecordingService]:
    """The ``RecorderFactory`` of ``edge-app run``: None while nothing is recorded and no recordings
    exist (a later configuration change that records a camera starts it); a folder of earlier
    recordings keeps its retention and read side even with recording off."""
    if not settings_of(config) and not Path(config.record.dir).exists():
        return None
    return RecordingService(config, on_clip, on_clips_removed)
