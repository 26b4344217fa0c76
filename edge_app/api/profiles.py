"""``GET``/``POST /api/v1/profile``: the active profile, and a manual switch (docs/profiles.md).

A switch is a configuration change through the same writer as every other write route (the same
token, the same lock, the same 400s), made by ``switch_profile``: the profile holds until the
next scheduled boundary, then the schedule takes over again.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Tuple

from flask import Blueprint, Response, jsonify
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from edge_app.api.config_writer import ConfigWriter
from edge_app.api.routing import RequestBody, ResponseSpec, Route, error, register_routes
from edge_app.http_server.query_params import problem_sentence
from edge_app.config.profile_schedule import ProfileReport, report_of
from edge_app.config.schema_rules import ID_PATTERN
from edge_app.config_change.changes import Origin
from edge_app.config_change.profile_switch import switch_profile
from edge_app.http_server.errors import ApiError
from edge_app.http_server.json_body import read_json_body


class ProfileSwitchBody(BaseModel):
    """The profile to switch to."""

    model_config = ConfigDict(extra="forbid", strict=True)

    profile: str = Field(title="Profile", pattern=ID_PATTERN, description="A name in profiles.definitions")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def get_profile(writer: ConfigWriter) -> Response:
    return jsonify(report_of(writer.current().profiles, _now()).to_dict())


def set_profile(writer: ConfigWriter) -> Response:
    try:
        body = ProfileSwitchBody.model_validate(read_json_body())
    except ValidationError as err:
        raise ApiError(400, problem_sentence(err)) from None
    report = writer.through(lambda changes: switch_profile(changes, body.profile, Origin.API, _now()))
    return jsonify(report.to_dict())


_PROFILE = ResponseSpec("The active profile, why, and the next scheduled boundary", ProfileReport)

#: the endpoint is ``profiles.<view name>``
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/profile", get_profile, "The active profile, why it is active and the next scheduled "
          "boundary", "profiles", {200: _PROFILE}),
    Route("POST", "/api/v1/profile", set_profile, "Switch to a profile; it holds until the next scheduled boundary, "
          "then the schedule takes over (saved, applied live)", "profiles",
          {200: _PROFILE, 400: error("Not a profile of this appliance, or a bad body; nothing changed"),
           413: error("Body larger than api.max_body_bytes"), 415: error("Body is not JSON")},
          body=RequestBody(ProfileSwitchBody)),
)


def profiles_blueprint(writer: ConfigWriter) -> Blueprint:
    return register_routes(Blueprint("profiles", __name__), ROUTES, writer)
