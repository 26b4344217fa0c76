"""What the running appliance offers to its front ends, and the typed reports it answers with.

The appliance's read side implements ``ApplianceReads``; the REST API, the metrics, the MQTT
stats message and the systemd status line are all built from the same ``StatusReport``, so a
figure cannot mean one thing in one place and another elsewhere. This module sits below the pipeline and
the API and depends on neither, so both may use it without importing each other.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Protocol, Tuple

import numpy as np

from edge_app.config.schema import AppConfig
from edge_app.config.profile_schedule import ProfileReport
from edge_app.detect.detections import Detections
from edge_app.events.model import Event
from edge_app.events.query import EventQuery, StoreHealth
from edge_app.events.tracks import EventTrack
from edge_app.events.zone_stats import ZoneStats
from edge_app.capture.gpu_image import FrameImage, bgr_image
from edge_app.health.report import HealthReport
from edge_app.notify.notifier import NotifierStatus
from edge_app.record.types import CameraRecordingStatus, RecordingReader
from edge_app.reporting.stage_times import StageTotal
from edge_app.review.book import ReviewBook


class UnknownCamera(KeyError):
    """Raised for a camera id that is not configured (the API answers 404)."""


@dataclass
class ApplyResult:
    config: AppConfig
    restart_required: List[str] = field(default_factory=list)  # e.g. ["api.port"]
    #: parts still being applied in the background when the answer is sent, e.g. ["model"];
    #: their progress is ``StatusReport.model_change`` (and ``engine_build`` for TensorRT)
    applying: List[str] = field(default_factory=list)


@dataclass
class AnalysedFrame:
    """The newest analysed frame of one camera, with the detections found in it."""

    camera_id: str
    frame_id: int
    ts: float  # capture time, Unix seconds
    image: FrameImage  # source size: BGR, or NV12 from a hardware decoder (use ``bgr()``)
    detections: Detections
    latency_ms: float = 0.0  # capture to the end of decoding
    model: str = "default"  # the name of the model that analysed it (cameras[].model)

    def bgr(self) -> np.ndarray:
        """BGR pixels for snapshots and live view; a GPU frame is downloaded only when asked."""
        return bgr_image(self.image)


@dataclass(frozen=True)
class MotionReport:
    """A camera's motion gating (``CameraReport.motion``; docs/configuration.md, ``motion``)."""

    motion: bool  # something moves now (R/cameras/<id>/motion)
    frames_checked: int
    frames_skipped: int  # held back by the gate: never reached the model
    last_reason: Optional[str]  # of the newest frame: motion, objects, keepalive (analysed) or idle (held back)
    masked_fraction: Optional[float]  # of the frame under the masks, once a frame was seen
    keepalive_only: bool  # the masks cover the whole frame: analysed on keepalive and tracked objects only
    cost_ms: float  # CPU per frame checked (moving average)


@dataclass(frozen=True)
class CameraReport:
    """One camera in ``GET /api/v1/cameras`` and ``status.cameras`` (docs/rest-api.md, CameraReport)."""

    id: str
    source: str  # credentials masked
    enabled: bool
    state: str  # a StreamState value
    fps: float  # frames per second delivered by the camera
    analyzed_fps: float  # frames per second run through the detector
    frames_captured: int
    frames_analyzed: int
    frames_dropped: int  # captured but never analysed (fps_limit, or the detector was busy)
    reconnects: int
    last_error: Optional[str]
    motion: Optional[MotionReport] = None  # None: motion gating is off for this camera
    # None: the configuration records nothing; else whether it records, "recording unavailable:
    # <why>" for a source without a compressed stream, and why writing is paused
    recording: Optional[CameraRecordingStatus] = None
    # Whether its frames go through the model now: the detect switch after the profile in force
    # (the stored configuration's cameras[].detect says what holds without a profile).
    detect: bool = True

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelReport:
    path: str
    input_size: Any  # [height, width] once loaded, else the configured side (or None)
    precision: str
    max_batch: int


@dataclass(frozen=True)
class MqttReport:
    connected: bool
    published: int
    queued: int  # not yet acknowledged by the broker
    dropped: int  # dropped because the offline queue was full
    stalled: bool = False  # connected but nothing moves, or paho's network thread is gone
    stall_reason: Optional[str] = None
    loop_restarts: int = 0  # times paho's network thread was found dead and started again
    callback_errors: Dict[str, int] = field(default_factory=dict)  # exceptions caught per paho callback
    lag_ms: float = 0.0  # how long the oldest message not yet handed to the broker link has waited
    behind_reason: Optional[str] = None  # set while lag_ms is over a second: where the cap is and why
    closed_by_broker: int = 0  # accepted connections the broker closed again (edge_app.mqtt_takeover)
    takeover_warning: Optional[str] = None  # set while that looks like another client taking the session over


@dataclass(frozen=True)
class LatencyReport:
    p50: Optional[float]
    p99: Optional[float]


@dataclass(frozen=True)
class PipelineReport:
    fps: float
    latency_ms: LatencyReport  # capture to publish
    stage_ms: Dict[str, float]  # mean per frame of each stage
    errors: int
    stalled: bool
    stall_reason: Optional[str]
    last_batch_age_s: Optional[float]  # None before the first batch


@dataclass(frozen=True)
class TrackerProcessesReport:
    """The trackers' child processes (``tracking.processes``, docs/architecture.md)."""

    processes: int  # children in use; 0: every tracker runs in the appliance's process
    # children given up since the appliance started (one that exited or stopped answering);
    # the next frame of their cameras starts a new one, and their tracks start over
    restarts: int = 0


@dataclass(frozen=True)
class ModelChangeReport:
    """The latest model change made through the configuration, loaded in the background."""

    state: str  # "loading", then "applied", "failed" or "cancelled" (a newer change replaced it)
    path: str  # the model being loaded
    started_ts: float  # Unix seconds
    finished_ts: Optional[float] = None
    error: Optional[str] = None  # why it failed; the previous model keeps running
    name: str = "default"  # which model (models[].name; the single model is default)


@dataclass(frozen=True)
class ArtifactReport:
    """The fleet artifact (docs/fleet.md, "Models and engines over the air") whose staged files a model runs."""

    name: str
    version: str  # the version that runs: during a rollout, the old one until the new one is loaded


@dataclass(frozen=True)
class EngineBuildReport:
    """A model's TensorRT engine build, as its latest progress report said (``ModelStatusReport.engine_build``)."""

    model: str  # the ONNX file the engine is built from
    state: str  # "building", "done" or "failed"
    phase: str
    fraction: Optional[float]  # 0..1; None where TensorRT does not say (8.x)
    percent: Optional[float]
    elapsed_s: float


@dataclass(frozen=True)
class ModelStatusReport:
    """One model of ``models`` (the single ``model`` is the one named default) and its cameras."""

    name: str
    state: str  # "loading", "running" or "failed" (error says why; the other models run on)
    backend: Optional[str]  # None until loaded
    path: str  # credentials masked
    input_size: Any  # [height, width] once loaded, else the configured side (or None)
    precision: str
    max_batch: int
    cameras: List[str]  # the cameras that name this model
    batches_per_s: float
    fps: float  # frames per second analysed
    latency_ms: LatencyReport  # capture to publish, of this model's frames
    error: Optional[str] = None
    change: Optional[ModelChangeReport] = None  # the latest change of this model
    artifact: Optional[ArtifactReport] = None  # the fleet artifact that runs; None: a local file (path), or none yet
    # Set while the model names a fleet artifact but runs its local path (the fetch failed at start): says so
    fallback: Optional[str] = None
    engine_build: Optional[EngineBuildReport] = None  # this model's latest TensorRT engine build


@dataclass(frozen=True)
class CountsReport:
    """The body of ``GET /api/v1/counts`` (docs/rest-api.md, Counts)."""

    cameras: Dict[str, Dict[str, int]] = field(default_factory=dict)  # camera -> label -> objects in view
    zones: Dict[str, Dict[str, int]] = field(default_factory=dict)  # zone -> label -> objects in the zone
    # line -> {"in": n, "out": n} since the counts were last reset
    lines: Dict[str, Dict[str, int]] = field(default_factory=dict)
    # zone -> occupancy now, mean dwell over the last hour, loitering and the occupancy alert
    zone_stats: Dict[str, ZoneStats] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RemoteConfigReport:
    """Whether ``R/config/desired`` is acted on, how it is authenticated, and what the broker allows."""

    enabled: bool  # fleet.remote_config
    authentication: Optional[str]  # "signature", "broker login", or None (off, or nothing to trust)
    broker_anonymous: Optional[bool]  # True: the broker accepted a client without a login; None: not known
    warnings: List[str] = field(default_factory=list)
    refused: int = 0  # desired messages refused before their patch was looked at
    last_refusal: Optional[str] = None


@dataclass(frozen=True)
class RecordingReport:
    """The recording store in ``GET /api/v1/status``: where it writes and whether it may."""

    directory: str
    paused: Optional[str]  # why writing stopped (the disk below its reserve); None while it writes
    recording: List[str]  # cameras whose packets are being written now
    bytes_written: int
    packets_dropped: int
    clips_preroll_short: int = 0  # clips that came too late for the pre-roll held in memory
    clips_skipped: int = 0  # events stored without a clip (record.events.max_concurrent, max_mb_per_hour)
    clips_cut: int = 0  # clips ended early because a camera's clip bytes of the hour were spent
    masked_packets_dropped: int = 0  # source packets the privacy-masked re-encodes could not take in time


@dataclass(frozen=True)
class StatusReport:
    """The body of ``GET /api/v1/status``."""

    device_id: str
    version: str
    uptime_s: float
    backend: Optional[str]  # None while the model loads
    model: ModelReport
    mqtt: MqttReport
    cameras: List[CameraReport]
    pipeline: PipelineReport
    # One build of models[].engine_build, kept for the clients of one model: the build started last
    # among those still building, else the build started last
    engine_build: Optional[Dict[str, Any]] = None
    model_change: Optional[ModelChangeReport] = None
    events: Optional[StoreHealth] = None  # the event store: on disk, or why not (a full disk, say)
    health: Optional[HealthReport] = None  # the device: temperatures, throttling, power, disk (docs/health.md)
    models: List[ModelStatusReport] = field(default_factory=list)  # every model, ``model`` above is the first
    remote_config: Optional[RemoteConfigReport] = None  # R/config/desired (docs/fleet.md, "Who may configure an appliance")
    recording: Optional[RecordingReport] = None  # None: the configuration records nothing
    # Delivery per notifications.targets entry (docs/notifications.md); no targets: an empty list
    notifications: NotifierStatus = field(default_factory=lambda: NotifierStatus(()))
    profile: Optional[ProfileReport] = None  # the active profile and the next scheduled boundary (docs/profiles.md)
    tracking: TrackerProcessesReport = field(default_factory=lambda: TrackerProcessesReport(0))

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @property
    def frames_dropped(self) -> int:
        """Everything lost on the way: frames never analysed plus MQTT messages dropped."""
        return sum(camera.frames_dropped for camera in self.cameras) + self.mqtt.dropped


class ApplianceReads(Protocol):
    """What the front ends (REST API, metrics) read of the running appliance.

    Nothing here changes anything: the configuration changes only through
    ``edge_app.config_change.changes.ConfigChanges`` (the one change path, with its rules and its
    lock), a stored event goes only through ``EventDeletion``. tests/api/test_service_double.py
    keeps the API's test double to these names and signatures.
    """

    def status(self) -> StatusReport:
        ...

    def stage_times(self) -> List[StageTotal]:
        """Time per camera and stage of the analysed frames since the start (``/metrics``)."""

    def readiness(self) -> Tuple[bool, List[str]]:
        """(ready, reasons): ready once the model is loaded and at least one camera streams."""

    def cameras(self) -> List[CameraReport]:
        ...

    def latest_frame(self, camera_id: str) -> Optional[AnalysedFrame]:
        """None while the camera has no analysed frame yet; raises UnknownCamera."""

    def latest_detections(self, camera_id: str) -> Optional[Dict[str, Any]]:
        """The last detections payload as published on MQTT; None before the first; raises UnknownCamera."""

    def wait_frame(self, camera_id: str, after_frame_id: int, timeout_s: float) -> Optional[AnalysedFrame]:
        """Block until an analysed frame newer than ``after_frame_id`` exists (for MJPEG), or timeout."""

    def events(self, query: EventQuery) -> List[Event]:
        """Stored events matching ``query``, newest first, after skipping ``query.offset``, at most
        ``query.bounded_limit``."""

    def event_total(self, query: EventQuery) -> int:
        """How many stored events match ``query``, whatever its limit and offset."""

    def event(self, event_id: str) -> Optional[Event]:
        """One stored event, or None when unknown."""

    def event_snapshot(self, event_id: str) -> Optional[bytes]:
        """The JPEG of the event's best snapshot, or None when it has none (or is unknown)."""

    def event_track(self, event_id: str) -> Optional[EventTrack]:
        """The event's boxes over time (for a clip overlay), or None when none were kept (or it is unknown)."""

    def counts(self) -> CountsReport:
        ...

    def device_health(self) -> HealthReport:
        """The latest device health sample (never waits for a reader)."""

    def recordings(self) -> Optional[RecordingReader]:
        """The recording store's read side (clips, segments, exports); None while recording is off."""

    def reviews(self) -> Optional[ReviewBook]:
        """Review items of the event store, and their reviewed marks; None without an event store."""


class EventDeletion(Protocol):
    """``DELETE /api/v1/events/<id>``: the one thing the API removes that is not configuration."""

    def delete_event(self, event_id: str) -> bool:
        """Delete an event and its snapshot; False when it was unknown (or nothing is stored)."""
