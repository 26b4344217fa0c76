"""The fleet's request bodies and query parameters as typed models, each refused with one 400 sentence.

A body is read by :func:`edge_app.http_server.json_body.read_json_body` first (size, strict JSON, nesting),
then validated here: unknown keys are refused (``extra="forbid"``), a value that breaks a rule is
refused with the rule's own sentence, and a body of the wrong shape with a sentence showing the
shape. A query parameter left out or empty takes its default; unknown parameters are ignored, as
they always were. Path parameters are checked by the ``checked_*`` functions.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Literal, Optional, Type, TypeVar, Union

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError, field_validator

from edge_app.http_server.errors import ApiError
from edge_app.http_server.query_params import integer_arg, problem_sentence
from edge_app.fleet_service.artifacts import check_name
from edge_app.fleet_service.device_health import PROBLEM_FILTERS
from edge_app.fleet_service.queries import DEFAULT_PAGE, MAX_PAGE
from edge_app.fleet_service.rollouts import MAX_INT

DEVICE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
ROLLOUT_ID = re.compile(r"[0-9a-f]{32}")
MAX_TARGETS = 100_000

Model = TypeVar("Model", bound=BaseModel)


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def device_id_rule(value: str) -> str:
    """``value`` when it is a device id; ValueError otherwise (it would leave the device's MQTT topics)."""
    if not isinstance(value, str) or not DEVICE_ID.fullmatch(value):
        raise ValueError(f"a device id must match {DEVICE_ID.pattern}, got {str(value)[:80]!r}")
    return value


def checked_device_id(value: str) -> str:
    try:
        return device_id_rule(value)
    except ValueError as err:
        raise ApiError(400, str(err)) from None


def checked_name(name: str, version: str) -> None:
    """A model's name and version, as the artifact store takes them."""
    try:
        check_name(name, version)
    except ValueError as err:
        raise ApiError(400, str(err)) from None


def checked_rollout_id(value: str) -> str:
    if not ROLLOUT_ID.fullmatch(value):
        raise ApiError(400, f"a rollout id is 32 hexadecimal digits, got {value[:80]!r}")
    return value


def integer_rule(name: str, raw: Any, low: int, high: int) -> int:
    """The API's one integer rule for query parameters (ASCII digits only, bounded length)."""
    try:
        return integer_arg({name: str(raw)}, name, low, low, high)
    except ApiError as err:
        raise ValueError(err.message) from None


def _merge_patch(value: Any, where: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a JSON object (an RFC 7396 merge patch of the configuration)")
    if not value:
        raise ValueError(f"{where} is empty; it would change nothing")
    return value


def _targets(value: Any) -> Union[str, List[str]]:
    if value == "all":
        return "all"
    if not isinstance(value, list) or not value:
        raise ValueError('devices must be "all" or a non-empty list of device ids')
    if len(value) > MAX_TARGETS:
        raise ValueError(f"devices may list at most {MAX_TARGETS} ids")
    for item in value:
        if not isinstance(item, str):
            raise ValueError(f"devices must hold device ids (strings), got {item!r:.80}")
        device_id_rule(item)
    return value


Targets = Union[Literal["all"], List[str]]


class MergePatch(RootModel[Dict[str, Any]]):
    """``PATCH /api/v1/devices/<id>/config``: the body is the patch itself."""

    @field_validator("root", mode="before")
    @classmethod
    def _patch(cls, value: Any) -> Dict[str, Any]:
        return _merge_patch(value, "the body")


class FleetPatchBody(RequestModel):
    """``PATCH /api/v1/fleet/config``."""

    devices: Targets
    patch: Dict[str, Any]

    _devices = field_validator("devices", mode="before")(lambda cls, value: _targets(value))
    _patch = field_validator("patch", mode="before")(lambda cls, value: _merge_patch(value, "patch"))


class ModelRolloutBody(RequestModel):
    """``POST /api/v1/models/<name>/<version>/rollout``."""

    devices: Targets

    _devices = field_validator("devices", mode="before")(lambda cls, value: _targets(value))


class ResetBody(RequestModel):
    """``POST /api/v1/devices/<id>/config/reset``: the version the device is at now."""

    version: int

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_INT:
            raise ValueError("version must be an integer from 0 to 2^53 - 1")
        return value


def parse_body(model: Type[Model], value: Any, shape: Optional[str] = None) -> Model:
    """``value`` as ``model``. A broken rule answers the rule's sentence; a body of the wrong shape
    (not an object, a key missing or unknown) answers ``shape``, the sentence showing the right one."""
    if shape is not None and not isinstance(value, dict):
        raise ApiError(400, shape)
    try:
        return model.model_validate(value)
    except ValidationError as err:
        raise ApiError(400, _sentence(err, shape)) from None


def _sentence(err: ValidationError, shape: Optional[str]) -> str:
    problems = err.errors(include_url=False)
    if shape is not None and any(problem["type"] != "value_error" for problem in problems):
        return shape
    return problem_sentence(err)


class DeviceListQuery(RequestModel):
    """``GET /api/v1/devices``: filters, order and a page."""

    state: Optional[Literal["online", "offline"]] = None
    problem: Optional[str] = None
    sort: Optional[Literal["id", "problems"]] = None
    limit: int = DEFAULT_PAGE
    after: Optional[str] = None

    @field_validator("state", mode="before")
    @classmethod
    def _state(cls, value: str) -> str:
        if value not in ("online", "offline"):
            raise ValueError(f"state must be online or offline, got {value[:80]!r}")
        return value

    @field_validator("problem", mode="before")
    @classmethod
    def _problem(cls, value: str) -> str:
        if value not in PROBLEM_FILTERS:
            raise ValueError(f"problem must be one of {', '.join(PROBLEM_FILTERS)}, got {value[:80]!r}")
        return value

    @field_validator("sort", mode="before")
    @classmethod
    def _sort(cls, value: str) -> str:
        if value not in ("id", "problems"):
            raise ValueError(f"sort must be id or problems, got {value[:80]!r}")
        return value

    _limit = field_validator("limit", mode="before")(lambda cls, value: integer_rule("limit", value, 1, MAX_PAGE))
    _after = field_validator("after", mode="before")(lambda cls, value: device_id_rule(value))


class DeviceFilterQuery(RequestModel):
    """``GET /api/v1/events``: the fleet's one filter beside the appliance's event filters."""

    device: Optional[str] = None

    _device = field_validator("device", mode="before")(lambda cls, value: device_id_rule(value))


class ModelListQuery(RequestModel):
    """``GET /api/v1/models``."""

    name: Optional[str] = None

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: str) -> str:
        check_name(value, "0")
        return value


class DeleteModelQuery(RequestModel):
    """``DELETE /api/v1/models/<name>/<version>``: ``force=true`` deletes a version devices still report."""

    force: Literal["true", "false"] = "false"

    @field_validator("force", mode="before")
    @classmethod
    def _force(cls, value: str) -> str:
        if value not in ("true", "false"):
            raise ValueError("force must be true or false")
        return value
