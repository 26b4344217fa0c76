"""The fleet's REST routes (docs/rest-api.md, "Fleet service"), plus its rollouts and its own status.

Module-level views: each parses its request into the typed models of
:mod:`edge_app.fleet_service.request_models`, asks the service of ``route_state()`` and answers a
response model (:mod:`edge_app.fleet_service.response_models`) or a store's typed record.
"""
from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from edge_app.http_server.errors import ApiError
from edge_app.http_server.event_params import event_query
from edge_app.http_server.json_body import read_json_body
from edge_app.http_server.query_params import parse_query
from edge_app.fleet_service.request_models import (DeviceFilterQuery, DeviceListQuery, FleetPatchBody,
                                                   MergePatch, ResetBody, checked_device_id, checked_rollout_id,
                                                   parse_body)
from edge_app.fleet_service.response_models import (Deleted, DeviceRolloutStarted, EventList, RolloutList,
                                                    RolloutStarted, VersionReset)
from edge_app.fleet_service.rollouts import UnknownDevices
from edge_app.fleet_service.route_state import Route, blueprint_of, json_response, route_state

FLEET_PATCH_SHAPE = 'the body must be {"devices": [...] | "all", "patch": {...}}'
RESET_SHAPE = 'the body must be {"version": N}: the version the device is at now (0 after a reset on it)'


def _unknown_device(device_id: str) -> ApiError:
    return ApiError(404, f"unknown device {device_id!r}")


def status() -> Response:
    return jsonify(route_state().service.status().to_dict())


def devices() -> Response:
    query = parse_query(DeviceListQuery, request.args)
    page = route_state().service.devices(query.state, query.limit, query.after, query.problem, query.sort)
    return jsonify(page.to_dict())


def device(device_id: str) -> Response:
    found = route_state().service.device(checked_device_id(device_id))
    if found is None:
        raise _unknown_device(device_id)
    return jsonify(found.to_dict())


def events() -> Response:
    query = event_query(request.args)
    device_id = parse_query(DeviceFilterQuery, request.args).device
    return json_response(EventList(route_state().service.events(query, device_id)))


def patch_device(device_id: str) -> Response:
    checked_device_id(device_id)
    patch = parse_body(MergePatch, read_json_body()).root
    try:
        rollout = route_state().service.start_rollout([device_id], patch)
    except UnknownDevices:
        raise _unknown_device(device_id) from None
    return json_response(DeviceRolloutStarted(rollout.versions[device_id], rollout.rollout_id), 202)


def delete_device(device_id: str) -> Response:
    """A device and everything stored of it (admin token); it comes back if it goes on publishing."""
    checked_device_id(device_id)
    if not route_state().service.remove_device(device_id):
        raise _unknown_device(device_id)
    return json_response(Deleted(device_id))


def reset_device(device_id: str) -> Response:
    checked_device_id(device_id)
    body = parse_body(ResetBody, read_json_body(), RESET_SHAPE)
    try:
        cancelled = route_state().service.reset_version(device_id, body.version)
    except ValueError as err:
        raise ApiError(400, str(err)) from None
    except UnknownDevices:
        raise _unknown_device(device_id) from None
    return json_response(VersionReset(device_id, body.version, cancelled))


def patch_fleet() -> Response:
    body = parse_body(FleetPatchBody, read_json_body(), FLEET_PATCH_SHAPE)
    try:
        rollout = route_state().service.start_rollout(body.devices, body.patch)
    except UnknownDevices as err:
        raise ApiError(400, f"unknown device(s): {', '.join(err.device_ids[:20])}") from None
    return json_response(RolloutStarted(rollout.versions, rollout.rollout_id), 202)


def rollouts() -> Response:
    return json_response(RolloutList(route_state().service.rollouts()))


def rollout(rollout_id: str) -> Response:
    found = route_state().service.rollout(checked_rollout_id(rollout_id))
    if found is None:
        raise ApiError(404, f"unknown rollout {rollout_id!r}")
    return jsonify(found)


ROUTES = (
    Route("GET", "/api/v1/status", status),
    Route("GET", "/api/v1/devices", devices),
    Route("GET", "/api/v1/devices/<device_id>", device),
    Route("GET", "/api/v1/events", events),
    Route("PATCH", "/api/v1/devices/<device_id>/config", patch_device),
    Route("DELETE", "/api/v1/devices/<device_id>", delete_device),
    Route("POST", "/api/v1/devices/<device_id>/config/reset", reset_device),
    Route("PATCH", "/api/v1/fleet/config", patch_fleet),
    Route("GET", "/api/v1/rollouts", rollouts),
    Route("GET", "/api/v1/rollouts/<rollout_id>", rollout),
)


def fleet_blueprint() -> Blueprint:
    return blueprint_of("fleet", __name__, ROUTES)
