"""The device's recorder: the one way the appliance drives recording.

    recorder = DeviceRecorder(publish_event, event_store)  # opens nothing yet
    recorder.start(config)              # record.dir reconciled, a CameraRecorder per recorded camera, retention
    sink = recorder.sink("cam1")        # the PacketSink the camera's capture hands packets to (None: not recorded)
    message = recorder.on_event(message)  # the camera's recorder hears of it; the message carries the clip
    restart = recorder.configure(new_config, camera_ids)  # cameras whose sink came or went
    recorder.close()                    # after the open events ended: every file finished

The ``record`` settings go down once: ``resolve_record`` merges the ``record`` section with each
camera's own ``record`` choices into that camera's ``RecordSettings``, handed to its
``CameraRecorder`` (at start, or by ``update`` on a change), which hands them to its two parts:
the event clips (``pre_s`` to their pre-roll ring, ``post_s``, ``max_s``, the clip caps) and the
continuous segments (``segment_s``). ``record.retain`` goes to the retention thread, and its
reserve to the recorders started from then on.

Recording never keeps the appliance from analysing: a failure here is logged, not raised, and a
paused recorder (disk below its reserve) only stops writing; events and MQTT go on.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from edge_app.capture.packets import PacketSink
from edge_app.config.schema import AppConfig
from edge_app.config.schema_record import RecordSettings, resolve_record
from edge_app.events.model import END, NEW, EventMessage
from edge_app.record.clip_ledger import ClipLedger, EventClipSink
from edge_app.record.event_cameras import EventCameras
from edge_app.record.retention_thread import RETENTION_INTERVAL_S, RetentionThread, retention_policy
from edge_app.record.types import CameraRecordingStatus, RecordingReader
from edge_app.reporting.protocol import RecordingReport

if TYPE_CHECKING:  # they import PyAV: only an appliance that records loads it (below, as capture does)
    from edge_app.record.recorder import CameraRecorder
    from edge_app.record.store import RecordingStore

log = logging.getLogger(__name__)


def settings_of(config: AppConfig) -> Dict[str, RecordSettings]:
    """The recording settings of every enabled camera that records something."""
    found = {}
    for camera in config.cameras:
        settings = resolve_record(config.record, camera.id, getattr(camera, "record", None))
        if camera.enabled and settings.any_enabled:
            found[camera.id] = settings
    return found


class DeviceRecorder:
    """The recording folder, a ``CameraRecorder`` per recorded camera, retention, and the events'
    clips. ``enabled`` False (tools and tests that run an appliance) never opens a folder."""

    def __init__(self, publish_event: Callable[[EventMessage], None], event_store: Optional[EventClipSink] = None,
                 *, enabled: bool = True, retention_interval_s: float = RETENTION_INTERVAL_S) -> None:
        self._enabled = enabled
        self._retention_interval_s = retention_interval_s
        self._ledger = ClipLedger(publish_event, event_store)
        self._event_cameras = EventCameras()
        self._lock = threading.Lock()  # the recorders and settings (the publish thread reads them)
        self._store: Optional["RecordingStore"] = None
        self._retention: Optional[RetentionThread] = None
        self._recorders: Dict[str, "CameraRecorder"] = {}
        self._settings: Dict[str, RecordSettings] = {}
        self._directory = ""
        if event_store is not None:
            event_store.on_deleted(self.events_deleted)  # an event deleted (API, retention) takes its clip along

    # ---- lifecycle and configuration (under the appliance's locks) -----------------------------

    def start(self, config: AppConfig) -> None:
        """Open the recording folder and record what ``config`` says. While nothing is recorded and
        no folder exists, nothing opens (a later ``configure`` that records a camera opens it); a
        folder of earlier recordings keeps its retention and read side even with recording off."""
        if not self._enabled or self._store is not None:
            return
        if not settings_of(config) and not Path(config.record.dir).exists():
            return
        from edge_app.record.store import RecordingStore

        try:
            self._store, self._directory = RecordingStore(Path(config.record.dir)), str(config.record.dir)
            self._store.reconcile()  # before any writing: the files are the truth after a crash
            self._retention = RetentionThread(self._store, retention_policy(config.record.retain),
                                              self._ledger.clips_removed, self._retention_interval_s).start()
            self._follow(config)
        except Exception as err:  # recording must never keep the appliance from analysing
            log.exception("recording cannot start: %s", err)
            self.close()

    def configure(self, config: AppConfig, cameras: List[str]) -> List[str]:
        """A configuration change: the recorders take the new ``record`` settings. Returns those of
        ``cameras`` whose packets are wanted now and were not before, or the other way round: they
        restart with (or without) a sink."""
        before = {cid: self.records(cid) for cid in cameras}
        if self._store is None:
            self.start(config)
        else:
            try:
                self._follow(config)
            except Exception:
                log.exception("recording: the new record settings could not be applied")
            self._directory = str(config.record.dir)
        return [cid for cid in cameras if self.records(cid) != before[cid]]

    def _follow(self, config: AppConfig) -> None:
        """Start, update and stop the cameras' recorders as ``config`` records them."""
        from edge_app.record.recorder import CameraRecorder

        store, retention = self._store, self._retention
        assert store is not None and retention is not None
        policy = retention.policy = retention_policy(config.record.retain)  # the next run applies it
        wanted = settings_of(config)
        with self._lock:
            before, self._settings = self._settings, wanted
            gone = [self._recorders.pop(cid) for cid in before if cid not in wanted and cid in self._recorders]
        for recorder in gone:
            recorder.stop()  # finishes its files
        for camera_id, settings in wanted.items():
            if settings == before.get(camera_id):
                continue
            with self._lock:
                recorder = self._recorders.get(camera_id)
                if recorder is None:
                    # the reserve of this configuration; a running recorder keeps the one it started with
                    self._recorders[camera_id] = CameraRecorder(
                        store, settings, reserve_bytes=policy.reserve_bytes,
                        on_clip=self._ledger.clip_reported).start()
            if recorder is not None:
                recorder.update(settings)

    def close(self) -> None:
        """At shutdown, after the open events ended: their clips are finished and closed. Never raises."""
        with self._lock:
            recorders, self._recorders, self._settings = list(self._recorders.values()), {}, {}
            store, self._store = self._store, None
            retention, self._retention = self._retention, None
        try:
            if retention is not None:
                retention.stop()
            for recorder in recorders:
                recorder.stop()
            if store is not None:
                store.close()
        except Exception:
            log.exception("recording: closing the recorder failed")

    def records(self, camera_id: str) -> bool:
        """Whether the camera's packets are wanted (event clips or continuous recording on)."""
        with self._lock:
            return camera_id in self._settings

    def sink(self, camera_id: str) -> Optional[PacketSink]:
        """The camera's sink, None when its packets are not wanted (its source then stays as it is)."""
        return self._recorder(camera_id)

    def reader(self) -> Optional[RecordingReader]:
        """The recording folder's read side (clips, segments, export); None while none is open."""
        return self._store

    # ---- events (the pipeline's publish thread, or whoever ends events) ------------------------

    def on_event(self, message: EventMessage) -> EventMessage:
        """``message`` with the clip's figures; the camera's recorder hears of starts and ends."""
        if self._store is None:
            return message
        event = message.after
        try:
            recorder = self._recorder(event.camera_id)
            if message.type == NEW and recorder is not None and _clip_expected(recorder.status()):
                self._event_cameras.started(event.id, event.camera_id)
                recorder.event_started(event.id, event.camera_id, event.start_time)
                self._ledger.started(event.id)
            elif message.type == END and self._ledger.recording(event.id):
                ended = self._recorder(self._event_cameras.ended(event.id))
                if ended is not None:
                    ended.event_ended(event.id, event.end_time if event.end_time is not None else event.frame_time)
        except Exception:  # the event goes out in any case
            log.exception("recording: telling the recorder about event %s failed", event.id)
        return self._ledger.decorated(message)

    def events_deleted(self, event_ids: List[str]) -> None:
        """The event store deleted these events (its writer thread): their clips go too, through
        the camera's recorder (which closes the file if it still writes it), or straight from the
        folder for an older event."""
        self._ledger.forget(event_ids)
        store = self._store
        if store is None:
            return
        for event_id in event_ids:
            try:
                recorder = self._recorder(self._event_cameras.deleted(event_id))
                if recorder is not None:
                    recorder.event_deleted(event_id)
                else:
                    store.delete_event(event_id)
            except Exception:
                log.exception("recording: deleting the clip of event %s failed", event_id)

    # ---- what status, metrics and the dashboard read --------------------------------------------

    def camera_status(self, camera_id: str) -> Optional[CameraRecordingStatus]:
        return self._statuses().get(camera_id)

    def report(self) -> Optional[RecordingReport]:
        if self._store is None:
            return None
        statuses = self._statuses()
        paused = next((s.paused for s in statuses.values() if s.paused), None)
        return RecordingReport(directory=self._directory, paused=paused,
                               recording=sorted(c for c, s in statuses.items() if s.recording),
                               bytes_written=sum(s.bytes_written for s in statuses.values()),
                               packets_dropped=sum(s.packets_dropped for s in statuses.values()),
                               clips_preroll_short=sum(s.clips_preroll_short for s in statuses.values()),
                               clips_skipped=sum(s.clips_skipped for s in statuses.values()),
                               clips_cut=sum(s.clips_cut for s in statuses.values()))

    def _statuses(self) -> Dict[str, CameraRecordingStatus]:
        with self._lock:
            recorders = list(self._recorders.values())
        try:
            return {r.camera_id: r.status() for r in recorders}
        except Exception:
            log.exception("recording: the recorders' status failed")
            return {}

    def _recorder(self, camera_id: str) -> Optional["CameraRecorder"]:
        with self._lock:
            return self._recorders.get(camera_id) if camera_id else None


def _clip_expected(status: CameraRecordingStatus) -> bool:
    return status.events_enabled and status.unavailable is None and status.paused is None
