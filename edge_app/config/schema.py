"""The configuration as pydantic v2 models; docs/configuration.md is generated from them.

Every model forbids unknown keys: a typo in a YAML file must be an error, never a silently
ignored setting on a box in a cupboard.
"""
from __future__ import annotations

import re
from typing import Dict, List, Literal, Optional, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from edge_app.config.model_names import DEFAULT_MODEL, MAX_MODELS, check_models, model_location, named_models
from edge_app.config.schema_cameras import CameraConfig, MotionConfig
from edge_app.config.schema_fleet import FleetConfig
# Re-exported: the model sections were defined here, and are imported from here.
from edge_app.config.schema_model import ArtifactConfig, ModelConfig, NamedModelConfig  # noqa: F401
from edge_app.config.schema_notify import NotificationsConfig, check_target_cameras
from edge_app.config.schema_profiles import ProfilesConfig, check_profiles
from edge_app.config.schema_record import RecordConfig, RecordSettings, resolve_record
from edge_app.config.schema_speed import check_speed_pairs
from edge_app.config.schema_review import ReviewAlertsConfig, ReviewConfig, check_alert_zones
from edge_app.config.schema_rules import (_CONTROL_CHARS, ID_PATTERN, MAX_AREA_LABELS, MIN_TOKEN_CHARS, _clean_labels,
                                          _no_control_chars, _Strict, is_loopback_host)

MAX_CAMERAS = 64
MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_MQTT_QUEUE = 1_000_000


class TrackingConfig(_Strict):
    """A track_id on every detection; needed by events, zones and lines."""

    enabled: bool = Field(True, title="Tracking enabled")
    processes: Union[Literal["auto"], int] = Field(
        "auto", title="Tracker processes",
        description="run the cameras' trackers, with their zone tests and line crossings, in this many child "
                    "processes (0: in the appliance's process), so they do not take turns with the rest of the "
                    "analysis on one interpreter lock; the same tracks, zone changes and crossings either way; "
                    "auto: one per four cores, at most 4, none below 4 cores")

    @field_validator("processes", mode="before")
    @classmethod
    def _auto_or_count(cls, value: object) -> object:
        # One clear error rather than one per member of the union.
        if value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 16:
            raise ValueError("processes must be auto or a whole number from 0 to 16")
        return value


class EventsConfig(_Strict):
    """Tracked objects of interest become events with a best snapshot."""

    enabled: bool = Field(True, title="Events enabled")
    labels: List[str] = Field(default_factory=list, title="Event labels", max_length=MAX_AREA_LABELS, description="Labels that make events; empty = every label")
    min_frames: int = Field(3, title="Frames before an event", ge=1, le=1000, description="An object becomes an event after this many frames with it")
    end_after_s: float = Field(2.0, title="End after (s)", gt=0, le=3600, allow_inf_nan=False, description="An event ends when its object has been gone this long")
    snapshots: bool = Field(True, title="Keep snapshots", description="Keep the best JPEG of each event")
    dir: str = Field("events", title="Events directory", min_length=1, description="Event database (SQLite) and snapshots")
    retain_days: float = Field(7, title="Retain (days)", gt=0, le=3650, allow_inf_nan=False, description="Older events and their snapshots are deleted")
    max_mb: int = Field(1024, title="Max size (MiB)", ge=1, le=1_048_576, description="Oldest events deleted first beyond this size")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: List[str]) -> List[str]:
        return _clean_labels(value)

    @field_validator("dir")
    @classmethod
    def _dir_chars(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("events.dir may not be blank")
        return _no_control_chars(value, "events.dir")


class HomeAssistantConfig(_Strict):
    """Home Assistant MQTT discovery of the device and its entities."""

    enabled: bool = Field(False, title="Home Assistant discovery")
    discovery_prefix: str = Field(
        "homeassistant", title="Discovery prefix", min_length=1, max_length=256,
        description="Home Assistant's MQTT discovery prefix; its birth message is read from <prefix>/status",
    )
    max_entities: int = Field(
        500, title="Entities at most", ge=1, le=1000,
        description="Most entities announced for the device; beyond it snapshots, then zone, line, occupancy "
                    "and count entities are left out, in that order (logged). The message stays under 512 KiB",
    )

    @field_validator("discovery_prefix")
    @classmethod
    def _topic_levels(cls, value: str) -> str:
        # Part of a topic we publish and one we subscribe to: a wildcard would subscribe to far more.
        if any(ch in value for ch in "#+") or _CONTROL_CHARS.search(value):
            raise ValueError("discovery_prefix may not contain #, + or control characters")
        if any(not level.strip() for level in value.split("/")):
            raise ValueError("discovery_prefix may not start or end with / nor contain an empty level")
        return value


class HealthLimitsConfig(_Strict):
    """Limits that turn device health figures into problems (status, dashboard, log, MQTT)."""

    temperature_c: float = Field(85, title="Temperature limit (°C)", ge=20, le=150, allow_inf_nan=False,
                                 description="A thermal zone or GPU at or above this is a problem (hot)")
    disk_percent: float = Field(90, title="Disk limit (%)", gt=0, le=100, allow_inf_nan=False,
                                description="The state, events or recording directory's file system this full is a problem")
    memory_percent: float = Field(90, title="Memory limit (%)", gt=0, le=100, allow_inf_nan=False,
                                  description="Memory this much in use is a problem (on a Jetson the GPU shares it)")
    throttling: bool = Field(True, title="Throttling is a problem",
                             description="Clocks slowed down for heat or power (a passive trip point, an over-current "
                                         "event, NVML thermal or power-brake reasons) is a problem")


class HealthConfig(_Strict):
    """Device health: temperatures, throttling, power, GPU, memory and disk, sampled by one thread."""

    interval_s: float = Field(5, title="Sample every (s)", ge=1, le=3600, allow_inf_nan=False)
    publish_s: float = Field(30, title="Publish R/health every (s)", ge=1, le=86400, allow_inf_nan=False,
                             description="Retained compact JSON on R/health; also sent when the problems change")
    limits: HealthLimitsConfig = Field(default_factory=HealthLimitsConfig, title="Limits")


class TLSConfig(_Strict):
    enabled: bool = Field(False, title="TLS enabled")
    ca_certs: Optional[str] = Field(None, title="CA certificates")
    certfile: Optional[str] = Field(None, title="Client certificate")
    keyfile: Optional[str] = Field(None, title="Client key")
    insecure: bool = Field(False, title="Skip hostname verification")


class MQTTConfig(_Strict):
    enabled: bool = Field(True, title="MQTT enabled")
    host: str = Field("127.0.0.1", title="Broker host", min_length=1)
    port: int = Field(1883, title="Broker port", ge=1, le=65535)
    client_id: Optional[str] = Field(None, title="Client id")
    username: Optional[str] = Field(None, title="Username")
    password: Optional[str] = Field(None, title="Password")
    tls: TLSConfig = Field(default_factory=TLSConfig, title="TLS")
    keepalive: int = Field(30, title="Keepalive (s)", ge=5, le=3600)
    topic_prefix: str = Field("edge_app", title="Topic prefix", min_length=1)
    qos: Literal[0, 1, 2] = Field(1, title="QoS")
    publish_empty: bool = Field(False, title="Publish empty frames")
    max_queue: int = Field(10000, title="Offline queue size", ge=1, le=MAX_MQTT_QUEUE)
    stats_interval_s: float = Field(10, title="Stats interval (s)", gt=0)

    @field_validator("topic_prefix")
    @classmethod
    def _topic_chars(cls, value: str) -> str:
        if any(ch in value for ch in "#+") or value.startswith("/") or value.endswith("/"):
            raise ValueError("topic_prefix may not contain # or + nor start or end with /")
        return _no_control_chars(value, "topic_prefix")

    @field_validator("client_id")
    @classmethod
    def _client_id_chars(cls, value: Optional[str]) -> Optional[str]:
        return _no_control_chars(value, "client_id")

    @field_validator("qos", mode="before")
    @classmethod
    def _qos_not_a_boolean(cls, value: object) -> object:
        # A Literal of ints takes False and True as 0 and 1 (they compare equal), even in strict mode.
        if isinstance(value, bool):
            raise ValueError("qos must be 0, 1 or 2, not a boolean")
        return value


class APITLSConfig(_Strict):
    enabled: bool = Field(False, title="HTTPS enabled")
    certfile: Optional[str] = Field(None, title="Certificate (PEM)", description="Certificate chain; may also hold the key")
    keyfile: Optional[str] = Field(None, title="Private key (PEM)")

    @model_validator(mode="after")
    def _cert_when_enabled(self) -> "APITLSConfig":
        if self.enabled and not self.certfile:
            raise ValueError("api.tls.enabled needs api.tls.certfile")
        return self


class APIConfig(_Strict):
    enabled: bool = Field(True, title="API enabled")
    host: str = Field("127.0.0.1", title="Listen host")
    port: int = Field(8080, title="Listen port", ge=0, le=65535)
    token: Optional[str] = Field(None, title="Bearer token", validate_default=True, description=f"Needed (at least {MIN_TOKEN_CHARS} characters) when host is not loopback")
    max_body_bytes: int = Field(65536, title="Max body (bytes)", ge=1024, le=MAX_BODY_BYTES)
    metrics_auth: Literal["auto", "token", "open"] = Field("auto", title="Token for /metrics", description="auto: /metrics needs the token while the API listens beyond loopback; token: always (with a token set); open: never (per-camera motion and rates are then readable by anyone who reaches the port)")
    tls: APITLSConfig = Field(default_factory=APITLSConfig, title="HTTPS")
    allow_unsafe_sources: bool = Field(
        False, title="Allow unsafe sources through the API",
        description="Let PUT/PATCH add gst:/csi:// sources and paths outside the folders in use; only the file on disk can set it",
    )
    allowed_hosts: List[str] = Field(
        default_factory=list, title="Allowed Host names",
        description="DNS names the API answers to besides localhost and IP addresses (DNS rebinding protection)",
    )

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: List[str]) -> List[str]:
        cleaned = [name.strip().lower().rstrip(".") for name in value]
        for name in cleaned:
            if not re.fullmatch(r"[a-z0-9*]([a-z0-9.*-]{0,251}[a-z0-9])?", name):
                raise ValueError(f"{name!r} is not a host name")
        return cleaned

    @field_validator("token")
    @classmethod
    def _token_off_loopback(cls, value: Optional[str], info: ValidationInfo) -> Optional[str]:
        # With no token, anyone on the LAN could reconfigure the appliance (and read its camera
        # passwords through a config change): refuse rather than start exposed.
        host = info.data.get("host")
        if info.data.get("enabled", True) and host is not None and not is_loopback_host(host):
            if not value:
                raise ValueError(f"required when api.host ({host or 'all interfaces'}) is not loopback; "
                                 f"set a random token of at least {MIN_TOKEN_CHARS} characters (openssl rand -hex 24)")
            if len(value) < MIN_TOKEN_CHARS:
                raise ValueError(f"must have at least {MIN_TOKEN_CHARS} characters when api.host is not loopback")
        return value


class SnapshotConfig(_Strict):
    jpeg_quality: int = Field(85, title="JPEG quality", ge=1, le=100)
    annotate: bool = Field(True, title="Annotate snapshots")


class LoggingConfig(_Strict):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field("INFO", title="Log level")

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, value):
        return value.upper() if isinstance(value, str) else value


class CaptureConfig(_Strict):
    """Timing of reconnects and the stall watchdog."""

    stall_timeout_s: float = Field(10, title="Stall timeout (s)", gt=0, description="Reopen a stream that delivered no frame for this long")
    backoff_initial_s: float = Field(1, title="First reconnect delay (s)", gt=0)
    backoff_max_s: float = Field(30, title="Longest reconnect delay (s)", gt=0)
    open_timeout_s: float = Field(10, title="Open timeout (s)", gt=0)
    nvdec_processes: bool = Field(True, title="NVDEC in decoder processes",
                                  description="decoder nvdec: decode each camera in a process of its own (crash "
                                              "isolation, decoders not sharing Python's lock) rather than in a thread "
                                              "of the appliance (less CPU and GPU memory)")


class AppConfig(_Strict):
    device_id: str = Field("edge-01", title="Device id", pattern=ID_PATTERN)
    cameras: List[CameraConfig] = Field(default_factory=list, title="Cameras", max_length=MAX_CAMERAS)
    model: Optional[ModelConfig] = Field(None, title="Model", description="The one model, named default (or use models)")
    models: List[NamedModelConfig] = Field(
        default_factory=list, title="Models", max_length=MAX_MODELS,
        description="Several named models, each with its own detector; cameras[].model picks one. With model as well, "
                    f"no entry may be named {DEFAULT_MODEL} (model is that one)",
    )
    mqtt: MQTTConfig = Field(default_factory=MQTTConfig, title="MQTT")
    api: APIConfig = Field(default_factory=APIConfig, title="REST API")
    snapshots: SnapshotConfig = Field(default_factory=SnapshotConfig, title="Snapshots")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, title="Logging")
    capture: CaptureConfig = Field(default_factory=CaptureConfig, title="Capture")
    tracking: TrackingConfig = Field(default_factory=TrackingConfig, title="Tracking")
    events: EventsConfig = Field(default_factory=EventsConfig, title="Events")
    homeassistant: HomeAssistantConfig = Field(default_factory=HomeAssistantConfig, title="Home Assistant")
    health: HealthConfig = Field(default_factory=HealthConfig, title="Device health")
    fleet: FleetConfig = Field(default_factory=FleetConfig, title="Fleet")
    motion: MotionConfig = Field(default_factory=MotionConfig, title="Motion")
    record: RecordConfig = Field(default_factory=RecordConfig, title="Recording")
    review: ReviewConfig = Field(default_factory=ReviewConfig, title="Review",
                                 description="Review items (events grouped per camera) and which of them are alerts")
    notifications: NotificationsConfig = Field(
        default_factory=NotificationsConfig, title="Notifications",
        description="Where alerts are announced; only the configuration file can set this section")
    profiles: ProfilesConfig = Field(default_factory=ProfilesConfig, title="Profiles",
                                     description="Named sets of overrides switched by a weekly schedule, REST, MQTT "
                                                 "or the fleet (docs/profiles.md)")

    @field_validator("cameras")
    @classmethod
    def _unique_area_names(cls, cameras: List[CameraConfig]) -> List[CameraConfig]:
        # Zone counts are published per zone for the whole device, so a name may appear once.
        for kind in ("zones", "lines"):
            first_use = {}
            for ci, cam in enumerate(cameras):
                for ai, area in enumerate(getattr(cam, kind)):
                    where = f"cameras.{ci}.{kind}.{ai}.name"
                    if area.name in first_use:
                        raise ValueError(f"{where}: {kind[:-1]} name {area.name!r} is already used by {first_use[area.name]}")
                    first_use[area.name] = where
        return cameras

    @model_validator(mode="after")
    def _unique_camera_ids(self) -> "AppConfig":
        seen = set()
        for cam in self.cameras:
            if cam.id in seen:
                raise ValueError(f"camera id {cam.id!r} is used twice")
            seen.add(cam.id)
        return self

    @model_validator(mode="after")
    def _model_names(self) -> "AppConfig":
        check_models(self.model, self.models, self.cameras)
        return self

    @model_validator(mode="after")
    def _review_and_notification_names(self) -> "AppConfig":
        check_alert_zones(self.review, self.cameras)
        check_speed_pairs(self.cameras)
        check_target_cameras(self.notifications, [cam.id for cam in self.cameras])
        check_profiles(self.profiles, self.cameras)
        return self

    def alert_rules(self, camera_id: str) -> ReviewAlertsConfig:
        """The alert rules of one camera: its own review.alerts, else the review section's."""
        cam = self.camera(camera_id)
        own = cam.review.alerts if cam is not None else None
        return own if own is not None else self.review.alerts

    def camera(self, camera_id: str) -> Optional[CameraConfig]:
        return next((c for c in self.cameras if c.id == camera_id), None)

    def model_configs(self) -> Dict[str, ModelConfig]:
        """Every model by name: ``model`` as ``default`` first, then ``models`` in their order."""
        return named_models(self.model, self.models)

    def camera_ids_of(self, model_name: str) -> List[str]:
        """The cameras whose ``model`` names the model called ``model_name``, in their order."""
        return [c.id for c in self.cameras if c.model == model_name]

    def model_location(self, name: str) -> str:
        """``model`` or ``models.<i>``: where problems with the model called ``name`` are reported."""
        return model_location(self.model, self.models, name)

    def with_model(self, name: str, section: ModelConfig) -> "AppConfig":
        """A copy with the model called ``name`` replaced by ``section``."""
        if self.model is not None and name == DEFAULT_MODEL:
            return self.model_copy(update={"model": section})
        return self.model_copy(update={"models": [section if m.name == name else m for m in self.models]})

    def record_settings(self, camera_id: str) -> RecordSettings:
        """The recording settings of one camera: the record section with the camera's overrides."""
        cam = self.camera(camera_id)
        return resolve_record(self.record, camera_id, cam.record if cam else None)
