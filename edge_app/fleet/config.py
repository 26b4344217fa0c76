"""``FLEET.yaml``: the fleet service's configuration (docs/configuration.md, "Fleet service configuration").

The ``mqtt`` and ``api`` sections are the appliance's own models, so a broker or API setting
means the same thing in both files; ``topic_prefix`` is the one of the appliances to follow.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from edge_app.config.schema import (ID_PATTERN, MAX_DESIRED_KEY_CHARS, MIN_DESIRED_KEY_CHARS, APIConfig, LoggingConfig,
                                    MQTTConfig)
from edge_app.config.store import ConfigError, Problem, problems_from, read_yaml

DEFAULT_DATABASE_URL = "sqlite:///fleet.db"
# A prefix is one or more topic levels without wildcards: it is put in front of "/+/status".
_PREFIX = re.compile(r"^[^#+\x00-\x1f\x7f]{1,128}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


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


class FleetConfig(_Strict):
    mqtt: MQTTConfig = Field(default_factory=MQTTConfig, title="MQTT broker")
    topic_prefix: str = Field("edge_app", title="Topic prefix", description="The appliances' mqtt.topic_prefix")
    database: DatabaseConfig = Field(default_factory=DatabaseConfig, title="Database")
    api: APIConfig = Field(default_factory=APIConfig, title="REST API")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, title="Logging")
    # SecretStr: a key never shows in a dump, a repr or an error message of this configuration.
    desired_keys: Dict[str, SecretStr] = Field(
        default_factory=dict, title="Desired-configuration keys",
        description="device id -> that appliance's fleet.desired_key; rollouts to a device listed here are signed with it",
    )

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
