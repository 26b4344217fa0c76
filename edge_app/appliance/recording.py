"""Recording wired into the running appliance: the recorder, its packet sinks, and events linked to clips.

The recorder (``edge_app.record``) keeps each recorded camera's compressed packets and writes
event clips and segments by stream copy. This module is the appliance's side of it:

- one ``PacketSink`` per recorded camera, handed to that camera's ``CameraWorker``;
- every event message on its way out (``AnalysisHub``) tells the recorder that an event started
  or ended, and carries ``has_clip`` and the clip's length so far;
- the recorder's clip reports go into the event record (path, size, length) and, once a clip is
  complete (``post_s`` after its event ended), out as one more ``update`` with the final length;
- an event deleted (API or retention) has its clip deleted by the recorder;
- status, metrics and the watchdog's STATUS line read :meth:`RecordingHub.report`.

A paused recorder (disk below its reserve) only stops writing: analysis, events and MQTT go on.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Protocol, Set

from edge_app.capture.packets import PacketSink
from edge_app.config.schema import AppConfig
from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.record.types import CameraRecordingStatus, ClipInfo, RecordingReader
from edge_app.reporting.protocol import RecordingReport

log = logging.getLogger(__name__)

#: ended events whose clip is still being written (post_s), remembered to send the final update
MAX_AWAITING_CLIPS = 1000


class Recorder(Protocol):
    """What the appliance needs of the recording store (``edge_app.record``)."""

    def records(self, camera_id: str) -> bool:
        """Whether the camera's packets are wanted (event clips or continuous recording on)."""

    def sink(self, camera_id: str) -> PacketSink:
        ...

    def event_started(self, event_id: str, camera_id: str, start_ts: float) -> None:
        ...

    def event_ended(self, event_id: str, end_ts: float) -> None:
        ...

    def event_deleted(self, event_id: str) -> None:
        ...

    def statuses(self) -> List[CameraRecordingStatus]:
        ...

    def reader(self) -> RecordingReader:
        ...

    def configure(self, config: AppConfig) -> None:
        ...

    def close(self) -> None:
        ...


#: (configuration, a clip reported, the events whose clips retention removed) -> the recorder, or
#: None when the configuration records nothing
RecorderFactory = Callable[[AppConfig, Callable[[ClipInfo], None], Callable[[List[str]], None]], Optional[Recorder]]


class EventClipSink(Protocol):
    """Where the event record keeps its clip (``edge_app.events.store.EventStore``)."""

    def save_event(self, event: Event) -> bool: ...

    def save_clip(self, event_id: str, path: str, size_bytes: int, duration_s: float,
                  start_time: Optional[float] = None, end_time: Optional[float] = None) -> bool: ...

    def forget_clip(self, event_id: str) -> bool: ...

    def on_deleted(self, callback: Callable[[List[str]], None]) -> None: ...


class RecordingHub:
    """The recorder of the running appliance (None of it when the configuration records nothing)."""

    def __init__(self, factory: Optional[RecorderFactory], publish_event: Callable[[EventMessage], None],
                 store: Optional[EventClipSink] = None) -> None:
        self._factory = factory
        self._publish_event = publish_event
        self._store = store
        self._lock = threading.Lock()
        self._recorder: Optional[Recorder] = None
        self._directory: Optional[str] = None
        # event id -> its clip's parts as last reported (a clip longer than max_s continues in a new part)
        self._clips: Dict[str, Dict[int, ClipInfo]] = {}
        self._with_clip: Set[str] = set()  # open events whose clip is being written
        self._awaiting: "OrderedDict[str, Event]" = OrderedDict()  # ended, clip not complete yet
        if store is not None:
            store.on_deleted(self.events_deleted)  # an event deleted (API, retention) takes its clip along

    # -- lifecycle and configuration (under the appliance's locks) ----------------------------------
    def start(self, config: AppConfig) -> None:
        if self._factory is None:
            return
        try:
            self._recorder = self._factory(config, self._clip_reported, self._clips_removed)
        except Exception as err:  # recording must never keep the appliance from analysing
            log.exception("recording cannot start: %s", err)
            self._recorder = None
        self._directory = _record_dir(config)

    def configure(self, config: AppConfig, cameras: List[str]) -> List[str]:
        """A configuration change: the recorder takes the new ``record`` settings. Returns those of
        ``cameras`` whose packets are wanted now and were not before, or the other way round: they
        restart with (or without) a sink."""
        before = {cid: self.records(cid) for cid in cameras}
        if self._recorder is None:
            self.start(config)
        else:
            try:
                self._recorder.configure(config)
            except Exception:
                log.exception("recording: the new record settings could not be applied")
            self._directory = _record_dir(config)
        return [cid for cid in cameras if self.records(cid) != before[cid]]

    def close(self) -> None:
        """At shutdown, after the open events ended: their clips are finished and closed. Never raises."""
        recorder, self._recorder = self._recorder, None
        try:
            if recorder is not None:
                recorder.close()
        except Exception:
            log.exception("recording: closing the recorder failed")

    def records(self, camera_id: str) -> bool:
        return self._recorder is not None and self._recorder.records(camera_id)

    def sink(self, camera_id: str) -> Optional[PacketSink]:
        """The camera's sink, None when its packets are not wanted (its source then stays as it is)."""
        recorder = self._recorder
        return recorder.sink(camera_id) if recorder is not None and recorder.records(camera_id) else None

    def reader(self) -> Optional[RecordingReader]:
        recorder = self._recorder
        return None if recorder is None else recorder.reader()

    # -- events (the pipeline's publish thread, or whoever ends events) ------------------------------
    def on_event(self, message: EventMessage) -> EventMessage:
        """``message`` with the clip's figures; the recorder hears of starts and ends."""
        recorder, event = self._recorder, message.after
        if recorder is None:
            return message
        try:
            if message.type == NEW and self._clip_expected(event.camera_id):
                recorder.event_started(event.id, event.camera_id, event.start_time)
                with self._lock:
                    self._with_clip.add(event.id)
            elif message.type == END and event.id in self._with_clip:
                recorder.event_ended(event.id, event.end_time if event.end_time is not None else event.frame_time)
        except Exception:  # the event goes out in any case
            log.exception("recording: telling the recorder about event %s failed", event.id)
        after = self._decorated(event)
        before = None if message.before is None else self._decorated(message.before)
        if message.type == END:
            with self._lock:
                if event.id in self._with_clip:
                    self._with_clip.discard(event.id)
                    self._remember_awaiting(after)
        return dataclasses.replace(message, after=after, before=before)

    def events_deleted(self, event_ids: List[str]) -> None:
        """The event store deleted these events (its writer thread): their clips go too."""
        recorder = self._recorder
        with self._lock:
            for event_id in event_ids:
                self._clips.pop(event_id, None)
                self._awaiting.pop(event_id, None)
                self._with_clip.discard(event_id)
        if recorder is None:
            return
        for event_id in event_ids:
            try:
                recorder.event_deleted(event_id)
            except Exception:
                log.exception("recording: deleting the clip of event %s failed", event_id)

    # -- what status, metrics and the dashboard read ---------------------------------------------------
    def camera_status(self, camera_id: str) -> Optional[CameraRecordingStatus]:
        return self._statuses().get(camera_id)

    def report(self) -> Optional[RecordingReport]:
        statuses = self._statuses()
        if self._recorder is None:
            return None
        paused = next((s.paused for s in statuses.values() if s.paused), None)
        return RecordingReport(directory=self._directory or "", paused=paused,
                               recording=sorted(c for c, s in statuses.items() if s.recording),
                               bytes_written=sum(s.bytes_written for s in statuses.values()),
                               packets_dropped=sum(s.packets_dropped for s in statuses.values()),
                               clips_preroll_short=sum(s.clips_preroll_short for s in statuses.values()),
                               clips_skipped=sum(s.clips_skipped for s in statuses.values()),
                               clips_cut=sum(s.clips_cut for s in statuses.values()))

    def _statuses(self) -> Dict[str, CameraRecordingStatus]:
        recorder = self._recorder
        if recorder is None:
            return {}
        try:
            return {s.camera_id: s for s in recorder.statuses()}
        except Exception:
            log.exception("recording: the recorder's status failed")
            return {}

    # -- internals ---------------------------------------------------------------------------------
    def _clip_expected(self, camera_id: str) -> bool:
        status = self._statuses().get(camera_id)
        return (status is not None and status.events_enabled and status.unavailable is None
                and status.paused is None)

    def _decorated(self, event: Event) -> Event:
        with self._lock:
            clip = _whole(self._clips.get(event.id))
            recording = event.id in self._with_clip or event.id in self._awaiting
        if clip is None and not recording:
            return event
        return dataclasses.replace(event, has_clip=True, clip_duration_s=clip.duration_s if clip else 0.0)

    def _remember_awaiting(self, event: Event) -> None:
        self._awaiting[event.id] = event
        while len(self._awaiting) > MAX_AWAITING_CLIPS:
            self._awaiting.popitem(last=False)

    def _clips_removed(self, event_ids: List[str]) -> None:
        """The recorder's retention removed the last part of these events' clips: they have none now."""
        with self._lock:
            for event_id in event_ids:
                self._clips.pop(event_id, None)
        if self._store is not None:
            for event_id in event_ids:
                self._store.forget_clip(event_id)

    def _clip_reported(self, clip: ClipInfo) -> None:
        """The recorder's thread: a clip was written to (``complete`` once post_s is over)."""
        with self._lock:
            parts = self._clips.setdefault(clip.event_id, {})
            parts[int(getattr(clip, "part", 0) or 0)] = clip
            clip = _whole(parts) or clip
            finished = self._awaiting.pop(clip.event_id, None) if clip.complete else None
            if clip.complete and clip.event_id not in self._with_clip:
                self._clips.pop(clip.event_id, None)  # nothing more comes for it
        if self._store is not None:
            self._store.save_clip(clip.event_id, clip.path, clip.bytes, clip.duration_s, clip.start, clip.end)
        if finished is None:
            return
        after = dataclasses.replace(finished, has_clip=True, clip_duration_s=clip.duration_s)
        try:
            self._publish_event(EventMessage(UPDATE, after, finished))
        except Exception:
            log.exception("recording: publishing the clip of event %s failed", clip.event_id)
        if self._store is not None:
            self._store.save_event(after)


def _whole(parts: Optional[Dict[int, ClipInfo]]) -> Optional[ClipInfo]:
    """An event's clip as one: the first part's path, every part's bytes, from the first frame to
    the last; complete when its last part is."""
    if not parts:
        return None
    ordered = [parts[key] for key in sorted(parts)]
    return dataclasses.replace(ordered[0], start=min(p.start for p in ordered), end=max(p.end for p in ordered),
                               bytes=sum(p.bytes for p in ordered), complete=ordered[-1].complete)


def _record_dir(config: AppConfig) -> Optional[str]:
    record = getattr(config, "record", None)
    return None if record is None else str(record.dir)
