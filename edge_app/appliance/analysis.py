"""Tracking, zones, lines and events for every camera, and where their results go.

The pipeline hands each analysed frame to ``AnalysisHub.analyse`` (on its publish thread);
the camera's ``CameraAnalysis`` adds track ids and produces events, counts and crossings,
which go out over MQTT and into the event store. A camera gets an analysis while it is
enabled, its ``detect`` switch is on and ``tracking.enabled`` is set; switching it off (or
shutting down) ends its open events and sets its counts to 0. Line totals outlive both: they
are seeded from the store, so they survive restarts.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Protocol, Tuple

from edge_app.config.schema import AppConfig
from edge_app.config.schema_cameras import CameraConfig
from edge_app.events.camera_analysis import CameraAnalysis
from edge_app.events.frame_analysis import FrameAnalysis
from edge_app.events.counts import LineTotals
from edge_app.events.model import Event, EventMessage, Snapshot
from edge_app.events.tracks import EventTrack
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.reporting.protocol import AnalysedFrame, CountsReport, TrackerProcessesReport
from edge_app.reporting.stage_times import StageTimes
from edge_app.track.processes import TrackerProcesses, default_tracker_processes
from edge_app.track.tracker_host import TrackerUnavailable
from edge_app.track.tracker import MakeTracker, Tracker

log = logging.getLogger(__name__)


class EventSink(Protocol):
    """Where events, snapshots and line totals are kept (``edge_app.events.store.EventStore``)."""

    def save_event(self, event: Event) -> None: ...

    def save_snapshot(self, snapshot: Snapshot) -> None: ...

    def save_track(self, track: EventTrack) -> None: ...

    def save_line_counts(self, camera_id: str, totals: Dict[str, LineTotals]) -> None: ...

    def load_line_counts(self) -> Dict[str, Dict[str, LineTotals]]: ...


def _analysis_key(camera: CameraConfig, config: AppConfig) -> tuple:
    """What an analysis is built from: a change of any of it builds a new one."""
    # The model too: another model may know other labels, its tracks and events start afresh.
    return (camera.zones, camera.lines, config.events, config.tracking, config.snapshots.jpeg_quality, camera.model)


def analyses_camera(camera: CameraConfig, config: AppConfig) -> bool:
    return camera.enabled and camera.detect and config.tracking.enabled


def tracker_processes(config: AppConfig, cpu_count: Optional[int] = None) -> int:
    """How many child processes ``tracking.processes`` asks for on this device (0: trackers in this process)."""
    wanted = config.tracking.processes
    return default_tracker_processes(cpu_count) if wanted == "auto" else int(wanted)


class AnalysisHub:
    def __init__(self, publisher: Callable[[], MqttPublisher], store: Optional[EventSink] = None,
                 clock: Callable[[], float] = time.time,
                 on_event: Callable[[EventMessage], EventMessage] = lambda message: message,
                 stage_times: Optional[StageTimes] = None) -> None:
        self._publisher = publisher
        # Each frame's time in tracking, zones and lines, events, snapshots and their MQTT messages.
        self._stage_times = stage_times if stage_times is not None else StageTimes()
        self._store = store
        # Every event message passes here before it goes out: recording adds the clip's figures.
        self._on_event = on_event
        self._clock = clock
        # _lock guards which analyses exist; each camera's lock, the frames of one analysis (the
        # pipeline's lanes feed several cameras at once, each camera from one lane).
        self._lock = threading.Lock()
        self._camera_locks: Dict[str, threading.Lock] = {}
        self._analyses: Dict[str, CameraAnalysis] = {}
        # camera -> (clock when its newest frame was analysed, that frame's capture time)
        self._analysed_at: Dict[str, Tuple[float, float]] = {}
        self._keys: Dict[str, tuple] = {}
        self._listeners: List[Callable[[EventMessage], object]] = []  # also_tell
        # Line totals of cameras without an analysis right now, kept for when it comes back.
        self._line_totals: Dict[str, Dict[str, LineTotals]] = store.load_line_counts() if store is not None else {}
        # The trackers' child processes (tracking.processes), while there are any.
        self._processes: Optional[TrackerProcesses] = None
        self._restarts_before = 0  # children given up in sets of processes a configuration change replaced
        self._report_lock = threading.Lock()  # the two above change together

    # -- configuration (API thread, under the appliance's apply lock) -------------------------------
    def configure(self, config: AppConfig) -> None:
        """Build, keep or end the analysis of every camera to match ``config``."""
        wanted = {c.id: c for c in config.cameras if analyses_camera(c, config)}
        with self._lock:
            for camera_id in list(self._analyses):
                camera = wanted.get(camera_id)
                if camera is None or _analysis_key(camera, config) != self._keys[camera_id]:
                    self._end(camera_id)
            self._use_processes(tracker_processes(config))
            for camera_id, camera in wanted.items():
                if camera_id not in self._analyses:
                    seed = {name: (t.count_in, t.count_out) for name, t in self._line_totals.get(camera_id, {}).items()}
                    self._analyses[camera_id] = CameraAnalysis.from_config(
                        camera, config.events, jpeg_quality=config.snapshots.jpeg_quality, line_seed=seed,
                        stage_times=self._stage_times, make_tracker=self._make_tracker(camera_id))
                    self._keys[camera_id] = _analysis_key(camera, config)

    def _use_processes(self, count: int) -> None:
        """Keep, start or stop the trackers' child processes to have ``count`` of them. A change
        of ``tracking`` has ended every analysis before (it is part of their key)."""
        if self._processes is not None and self._processes.count != count:
            self._processes.close()
            with self._report_lock:  # the status never sees the old children counted twice, or not at all
                self._restarts_before += self._processes.restarts()
                self._processes = None
        if self._processes is None and count > 0:
            self._processes = TrackerProcesses(count)

    def _make_tracker(self, camera_id: str) -> MakeTracker:
        processes = self._processes
        if processes is None:
            return Tracker
        return lambda settings: processes.tracker(camera_id, settings)

    def tracker_process_ids(self) -> List[Optional[int]]:
        """The trackers' child processes (their pids; None for one not started yet); empty without any."""
        processes = self._processes
        return [] if processes is None else processes.pids()

    def tracker_processes_report(self) -> TrackerProcessesReport:
        with self._report_lock:
            processes, restarts = self._processes, self._restarts_before
            if processes is None:
                return TrackerProcessesReport(processes=0, restarts=restarts)
            return TrackerProcessesReport(processes=processes.count, restarts=restarts + processes.restarts())

    def _camera_lock(self, camera_id: str) -> threading.Lock:
        lock = self._camera_locks.get(camera_id)
        if lock is None:
            lock = self._camera_locks.setdefault(camera_id, threading.Lock())
        return lock

    def _end(self, camera_id: str) -> None:
        with self._camera_lock(camera_id):  # not half way through one of its frames
            analysis = self._analyses.pop(camera_id)
            self._keys.pop(camera_id, None)
            self._analysed_at.pop(camera_id, None)
            try:
                result = analysis.end_all(self._clock())
            finally:
                analysis.tracker.close()
            self._line_totals[camera_id] = analysis.line_counts.totals()
            self._send(result, analysis)

    def end_all(self) -> None:
        """At shutdown: every open event ends, counts go to 0 (before the publisher stops); the
        trackers' child processes stop (a later ``configure`` starts them again)."""
        with self._lock:
            try:
                for camera_id in list(self._analyses):
                    self._end(camera_id)
            finally:
                self._use_processes(0)

    # -- per frame (the pipeline's publish thread) --------------------------------------------------
    def analyse(self, frame: AnalysedFrame) -> AnalysedFrame:
        """The frame with track ids on its detections; events and counts sent on."""
        # Under the camera's lock: a CameraAnalysis is fed from one thread at a time, and configure()
        # (API thread) or tick() (stats thread) must not end or age it half way through a frame.
        # Other cameras go on meanwhile.
        with self._camera_lock(frame.camera_id):
            analysis = self._analyses.get(frame.camera_id)
            if analysis is None:
                return frame
            try:
                result = analysis.process(frame.frame_id, frame.ts, frame.image, frame.detections)
            except TrackerUnavailable as exc:  # a tracker's child died: this frame goes out without track ids
                log.warning("tracking a frame of camera %s failed: %s", frame.camera_id, exc)
                return frame
            except Exception:  # a bug in analysis must not stop detections
                log.exception("analysing a frame of camera %s failed", frame.camera_id)
                return frame
            self._analysed_at[frame.camera_id] = (self._clock(), frame.ts)
            start_s = time.perf_counter()
            self._send(result, analysis)
            # frames=0: the frame's MQTT time is counted once, with its detections (ResultStore)
            self._stage_times.add(frame.camera_id, "mqtt", time.perf_counter() - start_s, frames=0)
        return replace(frame, detections=result.detections)

    def has_objects(self, camera_id: str) -> Optional[bool]:
        """Whether the camera's tracker holds tracks now (tentative ones too); None without an analysis.

        Read by the camera's capture thread (motion gating) without the lock: a track count
        read half a frame late only lets one frame more or less through."""
        analysis = self._analyses.get(camera_id)
        return None if analysis is None else len(analysis.tracker) > 0

    def tick(self) -> None:
        """Ages the tracks of cameras that sent nothing for a while, so their events still end."""
        now = self._clock()
        with self._lock:
            for camera_id, analysis in list(self._analyses.items()):
                with self._camera_lock(camera_id):
                    at = self._camera_time(camera_id, now)
                    if analysis.idle_s(at) >= 1.0:
                        try:
                            result = analysis.tick(at)
                        except TrackerUnavailable as exc:  # its child is started again on the next request
                            log.warning("ageing the tracks of camera %s failed: %s", camera_id, exc)
                            continue
                        self._send(result, analysis)

    def _camera_time(self, camera_id: str, now: float) -> float:
        """``now`` on the camera's own time line, that of its frames' capture times.

        A busy device analyses a frame a second or two after capturing it; its tracks are
        timed by capture. Aged by the clock, they would end while the frame that shows their
        objects again is still on its way: a frame analysed now has about the capture time of
        the newest one plus the time since that was analysed."""
        analysed = self._analysed_at.get(camera_id)
        if analysed is None:
            return now
        analysed_s, captured_s = analysed
        return min(now, captured_s + max(0.0, now - analysed_s))

    def counts(self) -> CountsReport:
        cameras, zones, lines, zone_stats = {}, {}, {}, {}
        for camera_id, analysis in list(self._analyses.items()):
            snapshot = analysis.counts()
            cameras[camera_id] = dict(snapshot.objects)
            for zone, labels in snapshot.zones.items():
                zones[zone] = dict(labels)
            zone_stats.update(snapshot.zone_stats)
            for line, totals in snapshot.lines.items():
                lines[line] = totals.to_dict()
        for camera_id, totals in self._line_totals.items():
            if camera_id not in self._analyses:
                for line, total in totals.items():
                    lines.setdefault(line, total.to_dict())
        return CountsReport(cameras=cameras, zones=zones, lines=lines, zone_stats=zone_stats)

    def also_tell(self, listener: Callable[[EventMessage], object]) -> None:
        """Before ``start``: ``listener`` is told every event message as it goes out (notifications).
        It runs on the analysis thread, so it must not wait and should not raise."""
        self._listeners.append(listener)

    # -- where results go ---------------------------------------------------------------------------
    def _send(self, result: FrameAnalysis, analysis: CameraAnalysis) -> None:
        publisher, camera_id, ts = self._publisher(), result.camera_id, result.ts
        for message in result.events:
            message = self._on_event(message)
            publisher.publish_event(message)
            for listener in self._listeners:
                listener(message)
            if self._store is not None:
                self._store.save_event(message.after)
        for snapshot in result.snapshots:
            if self._store is not None:
                self._store.save_snapshot(snapshot)
        for track in result.tracks:  # after its event's end, like its snapshot
            if self._store is not None:
                self._store.save_track(track)
        for label, snapshot in result.label_snapshots.items():
            publisher.publish_snapshot(camera_id, label, snapshot.jpeg)
        model = result.model
        for label, count in result.object_counts.items():
            publisher.publish_object_count(camera_id, label, count, ts, model)
        for (zone, label), count in result.zone_counts.items():
            publisher.publish_zone_count(zone, label, count, ts, model)
        for zone, stats in result.zone_stats.items():
            publisher.publish_zone_stats(zone, stats, ts, model)
        for crossing in result.crossings:
            publisher.publish_line_crossing(camera_id, crossing.line, crossing.event_id, crossing.track_id,
                                            crossing.label, crossing.direction, crossing.ts, model, crossing.speed)
        for line, totals in result.line_counts.items():
            publisher.publish_line_count(camera_id, line, totals.count_in, totals.count_out, ts, model)
        if result.line_counts and self._store is not None:
            self._store.save_line_counts(camera_id, analysis.line_counts.totals())
