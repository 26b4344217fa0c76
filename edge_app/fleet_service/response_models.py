"""The bodies the fleet's routes answer, beside those its stores already type (``to_dict()``).

Answered through :func:`edge_app.fleet_service.route_state.json_response`; each field is a key
of the JSON object, in the order written here (docs/rest-api.md, "Fleet service").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Union


@dataclass(frozen=True)
class DeviceRolloutStarted:
    """202 to ``PATCH /api/v1/devices/<id>/config``: the device's new version and its rollout."""

    version: int
    rollout_id: str


@dataclass(frozen=True)
class RolloutStarted:
    """202 to ``PATCH /api/v1/fleet/config``: each targeted device's new version."""

    versions: Dict[str, int]
    rollout_id: str


@dataclass(frozen=True)
class ModelRolloutStarted:
    """202 to ``POST /api/v1/models/<name>/<version>/rollout``."""

    versions: Dict[str, int]
    rollout_id: str
    targeted: int


@dataclass(frozen=True)
class VersionReset:
    """``POST /api/v1/devices/<id>/config/reset``: how many pending versions were cancelled."""

    device_id: str
    version: int
    cancelled: int


@dataclass(frozen=True)
class Deleted:
    """A deletion: the device id, the model's name and version, or the engines' digests removed."""

    deleted: Union[str, Dict[str, str], List[str]]


@dataclass(frozen=True)
class EventList:
    events: List[Dict[str, Any]]


@dataclass(frozen=True)
class DeviceEventList:
    """``GET /api/v1/devices/<id>/events``: one appliance's events, each with its ``clip_url``."""

    device_id: str
    events: List[Dict[str, Any]]


@dataclass(frozen=True)
class RolloutList:
    rollouts: List[Dict[str, Any]]


@dataclass(frozen=True)
class ModelList:
    """``GET /api/v1/models``: each version with its engines, and the bytes the blob store holds."""

    models: List[Dict[str, Any]]
    used_bytes: int


@dataclass(frozen=True)
class EngineOffered:
    """``PUT /api/v1/engines``: whether this offer was the one kept."""

    sha256: str
    stored: bool
