"""What the front ends read of the running appliance: status, readiness, cameras, frames, detections,
counts, stored events, device health and recordings (``edge_app.reporting.protocol.ApplianceReads``).

The appliance's wiring changes what runs (configuration, detector, cameras, publisher); the reads
see it through ``RunningParts``, taken afresh for every read, and never change it.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple

from edge_app.appliance.analysis import AnalysisHub
from edge_app.appliance.engine_builds import EngineBuilds
from edge_app.appliance.report_builders import camera_report, model_report, model_status_report, pipeline_report
from edge_app.capture.camera import CameraWorker
from edge_app.capture.state import StreamState
from edge_app.config.schema import AppConfig
from edge_app.config.profile_schedule import ProfileReport
from edge_app.detect.base import Detector
from edge_app.detect.detections import Detections
from edge_app.events.model import Event
from edge_app.events.query import EventQuery
from edge_app.events.store import EventStore
from edge_app.events.tracks import EventTrack
from edge_app.health.report import HealthReport
from edge_app.notify.notifier import NotifierStatus
from edge_app.health.sampler import HealthSampler
from edge_app.mqtt import link_stall_watch
from edge_app.mqtt.payloads import detections_payload_for, stats_payload_for
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.pipeline.stall_watch import PipelineActivity, PipelineHealth, assess, readiness_reason
from edge_app.pipeline.results import ResultStore
from edge_app.record.device_recorder import DeviceRecorder
from edge_app.record.masked_sink import MaskedSinkStats
from edge_app.privacy.images import masked
from edge_app.record.types import RecordingReader
from edge_app.reporting.stage_times import StageTimes, StageTotal
from edge_app.review.book import ReviewBook
from edge_app.reporting.protocol import (AnalysedFrame, CameraReport, CountsReport, ModelChangeReport,
                                         ModelStatusReport, MqttReport, RemoteConfigReport, StatusReport, UnknownCamera)
from edge_app.version import __version__

if TYPE_CHECKING:
    from edge_app.appliance.model_set import ModelSet


@dataclass(frozen=True)
class RunningParts:
    """What runs at the moment of a read; a configuration change or a model swap replaces these."""

    config: AppConfig
    detector: Optional[Detector]
    loading: bool  # the first model is being loaded
    cameras: Mapping[str, CameraWorker]  # the enabled cameras' workers
    detecting: Mapping[str, CameraWorker]  # those whose frames go through the model
    publisher: MqttPublisher
    model_change: Optional[ModelChangeReport]
    remote_config: Optional[Callable[[], RemoteConfigReport]]  # the fleet agent's, if any
    models: Optional["ModelSet"] = None  # every model with its detector and pipeline
    profile: Optional[Callable[[], ProfileReport]] = None  # the profile in force (docs/profiles.md)


class PipelineLike(Protocol):
    """What the reads need of the pipelines (``Pipeline``, or ``ModelSet`` for every model's)."""

    @property
    def errors(self) -> int: ...

    def activity(self) -> PipelineActivity: ...


class RunningReads:
    """The read side of the appliance, over the parts it runs (``running`` gives them as they are now)."""

    def __init__(self, running: Callable[[], RunningParts], *, results: ResultStore, pipeline: "PipelineLike",
                 analysis: AnalysisHub, event_store: Optional[EventStore], health: HealthSampler,
                 stall_after_s: float, recording: Optional[DeviceRecorder] = None,
                 builds: Optional[EngineBuilds] = None, stage_times: Optional[StageTimes] = None,
                 notifications: Optional[Callable[[], NotifierStatus]] = None,
                 reviews: Optional[ReviewBook] = None,
                 masked: Optional[Callable[[str], Optional[MaskedSinkStats]]] = None):
        self._running = running
        self._masked = masked  # a masked camera's re-encode (MaskedSinks.stats)
        self._stage_times = stage_times if stage_times is not None else StageTimes()
        self._reviews = reviews
        self._builds = builds if builds is not None else EngineBuilds()  # each model's TensorRT engine build
        self._results = results
        self._pipeline = pipeline
        self._analysis = analysis
        self._event_store = event_store
        self._health = health
        self._recording = recording
        self._notifications = notifications  # the notifier's status per target
        self.stall_after_s = stall_after_s
        self._started_mono_s = time.monotonic()

    def _worker(self, running: RunningParts, camera_id: str) -> Optional[CameraWorker]:
        if running.config.camera(camera_id) is None:
            raise UnknownCamera(camera_id)
        return running.cameras.get(camera_id)

    def cameras(self) -> List[CameraReport]:
        running = self._running()
        reports = []
        for cam in running.config.cameras:
            worker = running.cameras.get(cam.id)
            recording = self._recording.camera_status(cam.id) if self._recording is not None else None
            masked = self._masked(cam.id) if self._masked is not None and recording is not None else None
            if masked is not None:
                recording = dataclasses.replace(recording, masked_encoder=masked.encoder,
                                                masked_packets_dropped=masked.packets_dropped)
            reports.append(camera_report(cam, worker.stats() if worker else {}, self._results.camera_figures(cam.id),
                                         recording))
        return reports

    def status(self) -> StatusReport:
        running = self._running()
        detector = running.detector
        first = next(iter(running.config.model_configs().values()))
        cameras = self.cameras()
        recording = self._recording.report() if self._recording is not None else None
        if recording is not None:
            recording = dataclasses.replace(recording, masked_packets_dropped=sum(
                c.recording.masked_packets_dropped for c in cameras if c.recording is not None))
        return StatusReport(
            device_id=running.config.device_id,
            version=__version__,
            uptime_s=round(time.monotonic() - self._started_mono_s, 1),
            backend=detector.backend_name if detector else None,
            model=model_report(first, detector),
            mqtt=MqttReport(**running.publisher.stats()),
            cameras=cameras,
            pipeline=pipeline_report(self._results.pipeline_figures(), self._pipeline.errors, self.pipeline_health()),
            engine_build=self.engine_build(),
            model_change=running.model_change,
            events=self._event_store.health() if self._event_store is not None else None,
            health=self._health.latest(),
            remote_config=running.remote_config() if running.remote_config is not None else None,
            models=self.models(running),
            recording=recording,
            notifications=self._notifications() if self._notifications is not None else NotifierStatus(()),
            profile=running.profile() if running.profile is not None else None,
            tracking=self._analysis.tracker_processes_report(),
        )

    def models(self, running: RunningParts) -> List[ModelStatusReport]:
        """Every model of the configuration with its cameras, state and figures."""
        reports = []
        for name, model in running.config.model_configs().items():
            unit = running.models.unit(name) if running.models is not None else None
            cameras = running.config.camera_ids_of(name)
            fps, latency = self._results.model_figures(name)
            reports.append(model_status_report(name, model, unit, cameras, fps, latency, self._builds.report(name)))
        return reports

    def pipeline_health(self) -> PipelineHealth:
        return assess(self._pipeline.activity(), time.monotonic(), self.stall_after_s)

    def mqtt_health(self) -> link_stall_watch.LinkHealth:
        """Whether the MQTT link is stalled (never while MQTT is off or the broker is merely away)."""
        return self._running().publisher.link_health()

    def engine_build(self) -> Optional[Dict[str, Any]]:
        """``status.engine_build``: one model's latest engine build progress (``EngineBuilds.latest``), or None."""
        return self._builds.latest(self._running().config.model_configs())

    def stats_payload(self) -> Dict[str, Any]:
        return stats_payload_for(self.status())

    def readiness(self) -> Tuple[bool, List[str]]:
        running = self._running()
        reasons = []
        if running.detector is None and (running.models is None or not running.models.detectors()):
            reasons.append("the model is still loading" if running.loading else "the model is not loaded")
        if not any(w.state == StreamState.STREAMING for w in running.cameras.values()):
            reasons.append("no camera is streaming")
        stalled = readiness_reason(self.pipeline_health())
        if stalled:
            reasons.append(stalled)
        mqtt_stalled = link_stall_watch.readiness_reason(self.mqtt_health())
        if mqtt_stalled:
            reasons.append(mqtt_stalled)
        return (not reasons, reasons)

    def _unanalysed(self, running: RunningParts, camera_id: str, frame) -> Optional[AnalysedFrame]:
        """A captured frame of a camera whose detection is off, as a frame without detections."""
        if frame is None:
            return None
        camera = running.config.camera(camera_id)
        name = camera.model if camera is not None else "default"
        detector = running.models.detectors().get(name) if running.models is not None else running.detector
        labels = detector.labels if detector is not None else ()
        image = masked(frame.image, self._results.privacy.masks(camera_id))  # the live view of it goes out
        return AnalysedFrame(camera_id, frame.frame_id, frame.ts, image, Detections.empty(labels), model=name)

    @staticmethod
    def _detection_off(running: RunningParts, camera_id: str) -> bool:
        return camera_id in running.cameras and camera_id not in running.detecting

    def latest_frame(self, camera_id: str) -> Optional[AnalysedFrame]:
        running = self._running()
        worker = self._worker(running, camera_id)
        if worker is not None and self._detection_off(running, camera_id):
            return self._unanalysed(running, camera_id, worker.peek())
        return self._results.latest_frame(camera_id)

    def latest_detections(self, camera_id: str) -> Optional[Dict[str, Any]]:
        running = self._running()
        self._worker(running, camera_id)
        frame = self._results.latest_frame(camera_id)
        return None if frame is None else detections_payload_for(running.config.device_id, frame)

    def wait_frame(self, camera_id: str, after_frame_id: int, timeout_s: float) -> Optional[AnalysedFrame]:
        running = self._running()
        worker = self._worker(running, camera_id)
        if worker is not None and worker.newest_held_back and not self._detection_off(running, camera_id):
            # Nothing moves: the motion gate holds frames back, live view shows them as they come.
            frame = worker.wait_newer(after_frame_id, timeout_s)
            analysed = self._results.latest_frame(camera_id)
            if frame is not None and analysed is not None and analysed.frame_id == frame.frame_id:
                return analysed
            return self._unanalysed(running, camera_id, frame)
        if worker is None or not self._detection_off(running, camera_id):
            return self._results.wait_frame(camera_id, after_frame_id, timeout_s)
        # Live view of a camera that streams without analysis: its newest captured frame.
        return self._unanalysed(running, camera_id, worker.wait_newer(after_frame_id, timeout_s))

    def counts(self) -> CountsReport:
        return self._analysis.counts()

    def device_health(self) -> HealthReport:
        return self._health.latest()

    def stage_times(self) -> List[StageTotal]:
        return self._stage_times.totals()

    def reviews(self) -> Optional[ReviewBook]:
        return self._reviews

    def recordings(self) -> Optional[RecordingReader]:
        """The recording store's read side (clips, segments, export); None when nothing is recorded."""
        return None if self._recording is None else self._recording.reader()

    # -- stored events: none without a store --------------------------------------------------------
    def events(self, query: EventQuery) -> List[Event]:
        return [] if self._event_store is None else self._event_store.events(query)

    def event_total(self, query: EventQuery) -> int:
        return 0 if self._event_store is None else self._event_store.total(query)

    def event(self, event_id: str) -> Optional[Event]:
        return None if self._event_store is None else self._event_store.get(event_id)

    def event_snapshot(self, event_id: str) -> Optional[bytes]:
        return None if self._event_store is None else self._event_store.snapshot(event_id)

    def event_track(self, event_id: str) -> Optional[EventTrack]:
        return None if self._event_store is None else self._event_store.track(event_id)
