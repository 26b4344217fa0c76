"""An in-memory read side of the appliance (``ApplianceReads``) for testing the HTTP layer; the real
appliance is exercised in tests/e2e.

``InMemoryService`` implements the read side only, as the API sees it: it serves frames and
detections that a test publishes with :meth:`InMemoryService.publish` through the appliance's
own ``ResultStore``, so frames and payloads behave as in the real thing. The configuration it
runs is an ``AppliedConfig`` that only a ``ConfigChanges`` applies to (:func:`change_path`, which
saves the file as for the appliance), just as the appliance's apply is handed to its change path
alone. Its answers are the same typed reports; tests/api/test_service_double.py checks it against
the ``ApplianceReads`` protocol so the two cannot drift apart.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from edge_app.capture.frame import Frame
from edge_app.config.schema import AppConfig
from edge_app.config.file import ConfigError, ConfigFile, save_config
from edge_app.config_change.changes import ChangeRules, ConfigChanges
from edge_app.detect.detections import Detections
from edge_app.events.model import Event, Snapshot
from edge_app.events.query import EventQuery
from edge_app.events.store import EventStore
from edge_app.events.tracks import EventTrack
from edge_app.health.report import HealthReport, not_sampled_yet
from edge_app.pipeline.stall_watch import PipelineActivity, assess, readiness_reason
from edge_app.mqtt.payloads import detections_payload_for
from edge_app.pipeline.results import ResultStore
from edge_app.record.types import CameraRecordingStatus, RecordingReader
from edge_app.config.redact import mask_secrets
from edge_app.review.book import ReviewBook
from edge_app.review.model import AlertRule
from edge_app.reporting.protocol import (AnalysedFrame, ApplyResult, CameraReport, CountsReport, LatencyReport, ModelReport,
                                         ModelStatusReport,
                                         MqttReport, PipelineReport, RecordingReport, StatusReport, TrackerProcessesReport,
                                         UnknownCamera)
from edge_app.reporting.stage_times import StageTotal
from edge_app.version import __version__

RESTART_KEYS = (("api", "host"), ("api", "port"))


class AppliedConfig:
    """The configuration the double runs: what its ``ConfigChanges`` reads and applies to."""

    def __init__(self, config: AppConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self.apply_calls = 0
        self.apply_threads: List[str] = []  # the thread of each apply, in order
        self.refuse_apply: Optional[ConfigError] = None  # set to make apply_config fail

    def current_config(self) -> AppConfig:
        with self._lock:
            return self._config

    def apply_config(self, new_config: AppConfig) -> ApplyResult:
        self.apply_calls += 1
        self.apply_threads.append(threading.current_thread().name)
        if self.refuse_apply is not None:
            raise self.refuse_apply
        with self._lock:
            old = self._config
            restart = [
                f"{section}.{key}"
                for section, key in RESTART_KEYS
                if getattr(getattr(old, section), key) != getattr(getattr(new_config, section), key)
            ]
            self._config = new_config
            return ApplyResult(new_config, restart)


def change_path(service: "InMemoryService", rules: ChangeRules = ChangeRules()) -> ConfigChanges:
    """The double's one change path, as ``Appliance`` builds its own."""
    return ConfigChanges(service.applied.current_config, service.applied.apply_config, rules)


def saving_change_path(service: "InMemoryService", **rules: Any) -> ConfigChanges:
    """``change_path`` saving to the double's configuration file (as under ``edge-app run``)."""
    return change_path(service, ChangeRules(config_file=ConfigFile(service.config_path), **rules))


class InMemoryService:
    """The read side (``ApplianceReads``) of an appliance in memory, for testing the HTTP layer."""

    def __init__(self, config: AppConfig, config_path: Path):
        self.applied = AppliedConfig(config)
        self.config_path = Path(config_path)
        self._cond = threading.Condition()
        self.published: List[AnalysedFrame] = []
        self._results = ResultStore(self.published.append)
        self._next_frame_id: Dict[str, int] = {}
        self.model_loaded = True
        self.streaming: Dict[str, bool] = {cam.id: False for cam in config.cameras}
        self.fail_status: Optional[Exception] = None  # set to make status() raise
        self.mqtt_connected = True
        self.camera_errors: Dict[str, str] = {}  # camera id -> last_error to report
        # What the pipeline threads recorded, judged by the real stall check at ``now_s``.
        self.now_s = 1000.0
        self.pipeline_activity = PipelineActivity(running=True, gather_alive=True, last_batch_s=999.9, work_since_s=None)
        self.pipeline_errors = 0
        # GET /metrics: edge_app_stage_seconds (the real appliance's comes from StageTimes)
        self.stage_totals: List[StageTotal] = [StageTotal("cam0", "inference", 2.5, 100)]
        # A real store in a folder beside the configuration file; ``live_counts`` stands in for the engine's.
        self.event_store = EventStore(self.config_path.parent / f"{self.config_path.stem}-events")
        self.live_counts = CountsReport()
        self.health: HealthReport = not_sampled_yet(1000.0)  # a test sets a sampled report
        self.tracking = TrackerProcessesReport(processes=0)  # a test sets children and restarts
        self.recording_reader: Optional[RecordingReader] = None  # a test sets a real recording store
        self.recording_report: Optional[RecordingReport] = None  # status.recording, as a test sets it
        self.camera_recording: Dict[str, CameraRecordingStatus] = {}  # cameras[].recording, as a test sets it
        self.model_status: Dict[str, Dict[str, Any]] = {}  # per model name, fields of models[] as a test sets them
        # The appliance's review items over the same store, with the running configuration's rules.
        self.review_book = ReviewBook(self.event_store, gap_s=lambda: self._config.review.gap_s,
                                      rule_of=lambda camera_id: AlertRule.of(self._config.alert_rules(camera_id)))
        save_config(config, self.config_path)

    # -- test controls -----------------------------------------------------------------------
    def publish(self, camera_id: str, image: np.ndarray, detections: Detections) -> AnalysedFrame:
        """Make ``image`` the newest analysed frame of ``camera_id``."""
        with self._cond:
            frame_id = self._next_frame_id.get(camera_id, 1)
            self._next_frame_id[camera_id] = frame_id + 1
            self.streaming[camera_id] = True
        frame = Frame(camera_id, frame_id, time.time(), time.monotonic(), image)
        self._results.handle(frame, detections, {"inference": 10.0})
        return self._results.latest_frame(camera_id)

    def add_event(self, event: Event, jpeg: Optional[bytes] = None) -> Event:
        """Store ``event`` (and ``jpeg`` as its snapshot) as the event engine would, and wait for the write."""
        self.event_store.save_event(event)
        if jpeg is not None:
            self.event_store.save_snapshot(Snapshot(event.id, event.camera_id, event.label, event.top_score,
                                                    event.frame_time, jpeg))
        assert self.event_store.flush(), "the event store did not write in time"
        return event

    def close(self) -> None:
        self.event_store.close()

    @property
    def _config(self) -> AppConfig:
        return self.applied.current_config()

    # -- ApplianceReads --------------------------------------------------------------------------
    def _known(self, camera_id: str) -> None:
        if self._config.camera(camera_id) is None:
            raise UnknownCamera(camera_id)

    def status(self) -> StatusReport:
        if self.fail_status is not None:
            raise self.fail_status
        model = next(iter(self._config.model_configs().values()))
        health = assess(self.pipeline_activity, self.now_s)
        return StatusReport(
            device_id=self._config.device_id,
            version=__version__,
            uptime_s=12.0,
            backend="onnxruntime",
            model=ModelReport(path=model.path, input_size=model.input_size, precision=model.precision,
                              max_batch=model.max_batch),
            mqtt=MqttReport(connected=self.mqtt_connected, published=42, queued=3, dropped=1),
            cameras=self.cameras(),
            pipeline=PipelineReport(fps=24.5, latency_ms=LatencyReport(31.0, 80.0), stage_ms={"inference": 10.0},
                                    errors=self.pipeline_errors, stalled=health.stalled, stall_reason=health.reason,
                                    last_batch_age_s=health.last_batch_age_s),
            events=self.event_store.health(),
            health=self.health,
            models=[replace(ModelStatusReport(name=name, state="running", backend="onnxruntime",
                                              path=mask_secrets(section.path), input_size=section.input_size,
                                              precision=section.precision, max_batch=section.max_batch,
                                              cameras=[c.id for c in self._config.cameras if c.model == name],
                                              batches_per_s=12.0, fps=24.5, latency_ms=LatencyReport(31.0, 80.0)),
                            **self.model_status.get(name, {}))
                    for name, section in self._config.model_configs().items()],
            recording=self.recording_report,
            tracking=self.tracking,
        )

    def stage_times(self) -> List[StageTotal]:
        return list(self.stage_totals)

    def readiness(self) -> Tuple[bool, List[str]]:
        reasons = []
        if not self.model_loaded:
            reasons.append("the model is not loaded")
        if not any(self.streaming.values()):
            reasons.append("no camera is streaming")
        stalled = readiness_reason(assess(self.pipeline_activity, self.now_s))
        if stalled:
            reasons.append(stalled)
        return (not reasons, reasons)

    def cameras(self) -> List[CameraReport]:
        out = []
        for cam in self._config.cameras:
            figures = self._results.camera_figures(cam.id)
            n = figures.frames_analyzed
            out.append(CameraReport(
                id=cam.id,
                source=mask_secrets(cam.source),
                enabled=cam.enabled,
                state="streaming" if self.streaming.get(cam.id) else "connecting",
                fps=12.5 if n else 0.0,
                analyzed_fps=figures.analyzed_fps,
                frames_captured=2 * n,
                frames_analyzed=n,
                frames_dropped=n,
                reconnects=0,
                last_error=self.camera_errors.get(cam.id),
                recording=self.camera_recording.get(cam.id),
                detect=cam.detect,
            ))
        return out

    def latest_frame(self, camera_id: str) -> Optional[AnalysedFrame]:
        self._known(camera_id)
        return self._results.latest_frame(camera_id)

    def latest_detections(self, camera_id: str) -> Optional[Dict[str, Any]]:
        self._known(camera_id)
        frame = self._results.latest_frame(camera_id)
        return None if frame is None else detections_payload_for(self._config.device_id, frame)

    def wait_frame(self, camera_id: str, after_frame_id: int, timeout_s: float) -> Optional[AnalysedFrame]:
        self._known(camera_id)
        return self._results.wait_frame(camera_id, after_frame_id, timeout_s)

    def events(self, query: EventQuery) -> List[Event]:
        return self.event_store.events(query)

    def event_total(self, query: EventQuery) -> int:
        return self.event_store.total(query)

    def event(self, event_id: str) -> Optional[Event]:
        return self.event_store.get(event_id)

    def event_snapshot(self, event_id: str) -> Optional[bytes]:
        return self.event_store.snapshot(event_id)

    def event_track(self, event_id: str) -> Optional[EventTrack]:
        return self.event_store.track(event_id)

    def counts(self) -> CountsReport:
        lines = {line: totals.to_dict() for cams in self.event_store.load_line_counts().values()
                 for line, totals in cams.items()}
        return CountsReport(cameras=self.live_counts.cameras, zones=self.live_counts.zones, lines=lines,
                            zone_stats=self.live_counts.zone_stats)

    def device_health(self) -> HealthReport:
        return self.health

    def recordings(self) -> Optional[RecordingReader]:
        return self.recording_reader

    def reviews(self) -> Optional[ReviewBook]:
        return self.review_book
