"""``FLEET.yaml``: the fleet service's configuration (docs/configuration.md, "Fleet service configuration").

The ``mqtt`` and ``api`` sections are the appliance's own models, so a broker or API setting
means the same thing in both files; ``topic_prefix`` is the one of the appliances to follow.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit
from typing import Any, Dict, List, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from edge_app.config.schema import APIConfig, LoggingConfig, MQTTConfig
from edge_app.config.schema_fleet import MAX_DESIRED_KEY_CHARS, MIN_DESIRED_KEY_CHARS
from edge_app.config.schema_rules import ID_PATTERN
from edge_app.config.file import ConfigError, Problem, problems_from, read_yaml

DEFAULT_DATABASE_URL = "sqlite:///fleet.db"
MIN_DEVICE_TOKEN_CHARS, MAX_DEVICE_TOKEN_CHARS = 16, 256
# A prefix is one or more topic levels without wildcards: it is put in front of "/+/status".
_PREFIX = re.compile(r"^[^#+\x00-\x1f\x7f]{1,128}$")
# A device id pattern: the characters of a device id, plus the shell-style wildcards * and ?.
_DEVICE_PATTERN = re.compile(r"^[A-Za-z0-9_?*-]{1,64}$")
#: What each kind of message may weigh (bytes); an appliance's largest real ones are a few KiB.
#: health: a real report of a box with 12 thermal zones, 8 GPUs and 3 disks is about 8 KiB
DEFAULT_MESSAGE_BYTES = {"status": 4096, "camera_state": 4096, "count": 4096, "event": 65536, "stats": 65536,
                         "reported": 65536, "health": 65536}


class _Strict(BaseModel):
    # allow_inf_nan=False: a number field never holds NaN or infinity (a YAML .inf).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class DatabaseConfig(_Strict):
    url: str = Field(
        DEFAULT_DATABASE_URL, title="Database URL", min_length=1,
        description="sqlite:///relative.db, sqlite:////absolute.db or postgresql://user:pass@host:port/dbname",
    )

    events_retain_days: float = Field(
        7, title="Keep events (days)", gt=0, le=3650, allow_inf_nan=False,
        description="Events received longer ago are deleted (a thousand 4-camera appliances send millions a day)",
    )

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if not (value.startswith("sqlite:///") or value.startswith(("postgresql://", "postgres://"))):
            raise ValueError("must start with sqlite:/// or postgresql://")
        if value.startswith("sqlite:///") and len(value) == len("sqlite:///"):
            raise ValueError("sqlite:/// needs a file name (sqlite:///fleet.db)")
        return value


class DevicesConfig(_Strict):
    allow: List[str] = Field(
        default_factory=lambda: ["*"], title="Admitted device ids", max_length=10_000,
        description="Shell-style patterns (shop-*, depot-1?); a device id matching none is counted, never stored",
    )
    max: int = Field(
        1000, title="Devices at most", ge=1, le=1_000_000,
        description="Devices stored at most; an admitted id beyond this many is counted and refused like an unknown one",
    )
    forget_never_online_after_s: float = Field(
        86400, title="Forget never-online devices after (s)", ge=0, le=365 * 86400,
        description="A device whose status never said online (a made-up id) is removed this long after it was "
                    "first heard of, freeing its place under max; 0: never",
    )

    @field_validator("allow")
    @classmethod
    def _patterns(cls, value: List[str]) -> List[str]:
        for pattern in value:
            if not _DEVICE_PATTERN.match(pattern):
                raise ValueError(f"{pattern[:80]!r} is not a device id pattern ([A-Za-z0-9_-] with * and ?)")
        return value


class IngestConfig(_Strict):
    message_bytes: Dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_MESSAGE_BYTES), title="Largest message per kind (bytes)",
        description="status, camera_state, count, event, stats, reported, health; larger messages are dropped and counted",
    )
    device_bytes_per_min: int = Field(
        1024 * 1024, title="Bytes per device and minute", ge=1024, le=1 << 34,
        description="What one device may send in a minute; the rest of that minute is dropped and counted",
    )
    junk_bytes_per_min: int = Field(
        256 * 1024, title="Malformed bytes per device and minute", ge=1024, le=1 << 34,
        description="Malformed messages under one device id are always dropped and never charged to "
                    "device_bytes_per_min; beyond this many bytes a minute they are only counted, not logged",
    )
    stuck_after_s: float = Field(
        60, title="Stuck after (s)", gt=0, le=86400, allow_inf_nan=False,
        description="/readyz answers 503 when messages wait and nothing was written for this long",
    )

    @field_validator("message_bytes")
    @classmethod
    def _known_kinds(cls, value: Dict[str, int]) -> Dict[str, int]:
        unknown = sorted(set(value) - set(DEFAULT_MESSAGE_BYTES))
        if unknown:
            raise ValueError(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(DEFAULT_MESSAGE_BYTES)}")
        for kind, limit in value.items():
            if isinstance(limit, bool) or not 256 <= limit <= 1024 * 1024:
                raise ValueError(f"{kind}: a limit from 256 to 1048576 bytes")
        return {**DEFAULT_MESSAGE_BYTES, **value}


class RolloutsConfig(_Strict):
    timeout_s: float = Field(
        86400, title="Rollout timeout (s)", gt=0, le=365 * 86400, allow_inf_nan=False,
        description="A device that has not answered its version after this long is marked timed out, with the reason",
    )


class ArtifactsConfig(_Strict):
    dir: str = Field(
        "artifacts", title="Artifact directory", min_length=1, max_length=4096,
        description="Where model files and engines are kept, each named by its SHA-256 (relative to the working directory)",
    )
    max_mb: int = Field(
        10240, title="Artifacts at most (MiB)", ge=1, le=1 << 24,
        description="All stored files together; an upload beyond this is refused with 507",
    )
    max_upload_mb: int = Field(
        2048, title="Largest upload (MiB)", ge=1, le=1 << 16,
        description="One model file or engine; a larger body is refused with 413 before it is read",
    )
    engines_from: List[str] = Field(
        default_factory=list, title="Engines accepted from", max_length=10_000,
        description="Device id patterns (build-orin-*) whose built engines are kept and handed to other devices with "
                    "the same engine key; an engine runs on every such device, so list only devices you trust to "
                    "build (default: none, every device builds its own; [\"*\"]: any device)",
    )
    upload_deadline_s: float = Field(
        900, title="Upload deadline (s)", ge=10, le=86400, allow_inf_nan=False,
        description="A model or engine upload must arrive within this (other requests keep api's 30 s)",
    )

    @field_validator("engines_from")
    @classmethod
    def _engine_patterns(cls, value: List[str]) -> List[str]:
        for pattern in value:
            if not _DEVICE_PATTERN.match(pattern):
                raise ValueError(f"{pattern[:80]!r} is not a device id pattern ([A-Za-z0-9_-] with * and ?)")
        return value


class ApplianceApiConfig(_Strict):
    """How the fleet reaches one appliance's own REST API (its event clips are fetched from there)."""

    url: str = Field(
        ..., title="API URL", min_length=8, max_length=512,
        description="http(s)://host:port of the appliance's API, without a path (http://10.0.0.21:8080)",
    )
    token: Optional[SecretStr] = Field(None, title="API token", description="The appliance's api.token")
    ca_file: Optional[str] = Field(
        None, title="CA file", min_length=1, max_length=4096,
        description="PEM file of the CA (or the certificate) an https:// appliance is checked against; "
                    "default: the system's CAs",
    )
    timeout_s: float = Field(
        10, title="Timeout (s)", gt=0, le=120, allow_inf_nan=False,
        description="Per connection attempt and per read from the appliance",
    )

    @field_validator("url")
    @classmethod
    def _plain_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be http://host:port or https://host:port")
        if parts.username is not None or parts.password is not None:
            raise ValueError("must not carry credentials; set token instead")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError("must not have a path, query or fragment (the fleet adds /api/v1/...)")
        try:
            parts.port
        except ValueError as err:
            raise ValueError(f"has a bad port: {err}") from None
        return value.rstrip("/")


class FleetConfig(_Strict):
    mqtt: MQTTConfig = Field(default_factory=MQTTConfig, title="MQTT broker")
    topic_prefix: str = Field("edge_app", title="Topic prefix", description="The appliances' mqtt.topic_prefix")
    database: DatabaseConfig = Field(default_factory=DatabaseConfig, title="Database")
    api: APIConfig = Field(default_factory=APIConfig, title="REST API")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, title="Logging")
    devices: DevicesConfig = Field(default_factory=DevicesConfig, title="Admitted devices")
    ingest: IngestConfig = Field(default_factory=IngestConfig, title="Ingest limits")
    rollouts: RolloutsConfig = Field(default_factory=RolloutsConfig, title="Rollouts")
    # SecretStr: a key never shows in a dump, a repr or an error message of this configuration.
    desired_keys: Dict[str, SecretStr] = Field(
        default_factory=dict, title="Desired-configuration keys",
        description="device id -> that appliance's fleet.desired_key; rollouts to a device listed here are signed with it",
    )

    artifacts: ArtifactsConfig = Field(default_factory=ArtifactsConfig, title="Model artifacts")
    device_tokens: Dict[str, SecretStr] = Field(
        default_factory=dict, title="Device tokens", max_length=1_000_000,
        description="device id -> that appliance's fleet.token; a device fetches models and offers engines with it",
    )

    @field_validator("device_tokens")
    @classmethod
    def _usable_tokens(cls, value: Dict[str, SecretStr]) -> Dict[str, SecretStr]:
        for device_id, token in value.items():
            if not re.match(ID_PATTERN, device_id):
                raise ValueError(f"{device_id[:64]!r} is not a device id")
            if not MIN_DEVICE_TOKEN_CHARS <= len(token.get_secret_value()) <= MAX_DEVICE_TOKEN_CHARS:
                raise ValueError(f"the token of {device_id} must have {MIN_DEVICE_TOKEN_CHARS} to "
                                 f"{MAX_DEVICE_TOKEN_CHARS} characters (openssl rand -hex 32)")
        return value

    appliances: Dict[str, ApplianceApiConfig] = Field(
        default_factory=dict, title="Appliance APIs", max_length=100_000,
        description="device id -> {url, token, ca_file, timeout_s} of that appliance's REST API; "
                    "its event clips are listed and streamed through the fleet from there, never stored",
    )

    @field_validator("appliances")
    @classmethod
    def _device_ids(cls, value: Dict[str, ApplianceApiConfig]) -> Dict[str, ApplianceApiConfig]:
        for device_id in value:
            if not re.match(ID_PATTERN, device_id):
                raise ValueError(f"{device_id[:64]!r} is not a device id")
        return value

    @field_validator("desired_keys")
    @classmethod
    def _usable_keys(cls, value: Dict[str, SecretStr]) -> Dict[str, SecretStr]:
        for device_id, key in value.items():
            if not re.match(ID_PATTERN, device_id):
                raise ValueError(f"{device_id[:64]!r} is not a device id")
            if not MIN_DESIRED_KEY_CHARS <= len(key.get_secret_value()) <= MAX_DESIRED_KEY_CHARS:
                raise ValueError(f"the key of {device_id} must have {MIN_DESIRED_KEY_CHARS} to "
                                 f"{MAX_DESIRED_KEY_CHARS} characters (openssl rand -hex 32)")
        return value

    @field_validator("topic_prefix")
    @classmethod
    def _usable_prefix(cls, value: str) -> str:
        if not _PREFIX.match(value) or value.startswith("/") or value.endswith("/") or "//" in value:
            raise ValueError("must be topic levels without wildcards (+, #), empty levels or control characters")
        return value

    @model_validator(mode="before")
    @classmethod
    def _one_prefix(cls, data: Any) -> Any:
        # mqtt is the appliance's section, which has its own topic_prefix: one prefix, never two.
        mqtt = data.get("mqtt") if isinstance(data, dict) else None
        if isinstance(mqtt, dict) and "topic_prefix" in mqtt:
            if "topic_prefix" in data and data["topic_prefix"] != mqtt["topic_prefix"]:
                raise ValueError("mqtt.topic_prefix and topic_prefix differ; set topic_prefix only")
            data = {**data, "topic_prefix": mqtt["topic_prefix"]}
        return data

    @model_validator(mode="after")
    def _needs_mqtt(self) -> "FleetConfig":
        if not self.mqtt.enabled:
            raise ValueError("mqtt.enabled: the fleet service needs its broker")
        return self

    @property
    def mqtt_client_id(self) -> str:
        return self.mqtt.client_id or "edge-app-fleet"


def parse_fleet_config(data: Any, source: Optional[str] = None) -> FleetConfig:
    if not isinstance(data, dict):
        raise ConfigError([Problem("", "the configuration must be a mapping of keys to values")], source)
    try:
        return FleetConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(problems_from(err, FleetConfig), source) from None


def load_fleet_config(path: Union[str, Path]) -> FleetConfig:
    """The validated FLEET.yaml at ``path``; ConfigError naming every problem otherwise."""
    return parse_fleet_config(read_yaml(path), str(path))
