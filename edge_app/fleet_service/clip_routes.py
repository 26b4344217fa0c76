"""The fleet's routes to the clips kept on the appliances (docs/fleet.md, "Event clips").

- ``GET /api/v1/devices/<id>/events``: the events of one appliance, asked of its own API, each
  with ``clip_url``: the fleet's path of its clip, or null.
- ``GET /api/v1/devices/<id>/events/<event_id>/clip.mp4``: the clip streamed through from the
  appliance, Range and If-Range passed on (206, 416 come back as the appliance answers them);
  ``?part=N`` for a clip longer than the appliance's record.events.max_s.

Module-level views over ``route_state()``, like :mod:`edge_app.fleet_service.routes`.
"""
from __future__ import annotations

from typing import Any, Dict

from flask import Blueprint, Response, request
from pydantic import field_validator

from edge_app.finite_json import loads_finite
from edge_app.http_server.errors import ApiError
from edge_app.http_server.event_params import checked_event_id, event_query
from edge_app.record.types import MAX_PART
from edge_app.fleet_service.appliance_api import ApplianceApiError, UpstreamAnswer, annotate_clips
from edge_app.http_server.query_params import parse_query
from edge_app.fleet_service.request_models import RequestModel, checked_device_id, integer_rule
from edge_app.fleet_service.response_models import DeviceEventList
from edge_app.fleet_service.route_state import Route, blueprint_of, json_response, route_state

#: the query parameters of an appliance's event list that are passed on (checked first)
EVENT_FILTERS = ("camera", "label", "zone", "after", "before", "limit")


class ClipQuery(RequestModel):
    """``?part=N``: which part of a clip longer than the appliance's record.events.max_s."""

    part: int = 0

    _part = field_validator("part", mode="before")(lambda cls, value: integer_rule("part", value, 0, MAX_PART))


def device_events(device_id: str) -> Response:
    checked_device_id(device_id)
    event_query(request.args)  # the appliance checks them too; a bad one is the fleet client's 400
    params = {name: request.args[name] for name in EVENT_FILTERS if request.args.get(name)}
    try:
        status, body = route_state().appliances.events(device_id, params)
    except ApplianceApiError as err:
        raise ApiError(err.status, err.message) from None
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("events"), list):
        message = body.get("error") if isinstance(body, dict) else None
        raise ApiError(502, f"device {device_id!r} answered {status}: {str(message or 'no event list')[:200]}")
    return json_response(DeviceEventList(device_id, annotate_clips(device_id, body["events"])))


def device_clip(device_id: str, event_id: str) -> Response:
    checked_device_id(device_id)
    checked_event_id(event_id)
    part = parse_query(ClipQuery, request.args).part
    try:
        answer = route_state().appliances.clip(device_id, event_id, request.headers, part)
    except ApplianceApiError as err:
        raise ApiError(err.status, err.message) from None
    if answer.status not in (200, 206):
        raise _refused_clip(device_id, answer)
    response = Response(answer.chunks, status=answer.status, direct_passthrough=True,
                        mimetype=answer.headers.get("Content-Type", "video/mp4"))
    for name, value in answer.headers.items():
        if name != "Content-Type":
            response.headers[name] = value
    return response


def _refused_clip(device_id: str, answer: UpstreamAnswer) -> ApiError:
    """The appliance's refusal passed on: its 400, 404 and 416 as they are (with Content-Range), else 502."""
    body = b"".join(answer.chunks)[:4096]
    extra: Dict[str, Any] = {k: v for k, v in answer.headers.items() if k == "Content-Range"}
    return ApiError(answer.status if answer.status in (400, 404, 416) else 502,
                    _sentence(body) or f"device {device_id!r} answered {answer.status}", headers=extra)


def _sentence(body: bytes) -> str:
    """The appliance's {"error": ...} sentence, if that is what it answered."""
    try:
        value = loads_finite(body)
    except ValueError:
        return ""
    return str(value.get("error", ""))[:300] if isinstance(value, dict) else ""


ROUTES = (
    Route("GET", "/api/v1/devices/<device_id>/events", device_events),
    Route("GET", "/api/v1/devices/<device_id>/events/<event_id>/clip.mp4", device_clip),
)


def clip_blueprint() -> Blueprint:
    return blueprint_of("fleet_clips", __name__, ROUTES)
