"""The fleet's REST routes (docs/rest-api.md, "Fleet service"), plus its rollouts and its own status."""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Union

from flask import Blueprint, Response, jsonify, request

from edge_app.http_server.errors import ApiError
from edge_app.http_server.event_params import event_query
from edge_app.http_server.json_body import read_json_body
from edge_app.http_server.query_params import integer_arg
from edge_app.fleet_service.device_health import PROBLEM_FILTERS
from edge_app.fleet_service.queries import DEFAULT_PAGE, MAX_PAGE
from edge_app.fleet_service.rollouts import UnknownDevices
from edge_app.fleet_service.fleet import FleetService

DEVICE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
ROLLOUT_ID = re.compile(r"[0-9a-f]{32}")
MAX_TARGETS = 100_000


def _device_id(value: str) -> str:
    if not DEVICE_ID.fullmatch(value):
        raise ApiError(400, f"a device id must match {DEVICE_ID.pattern}, got {value[:80]!r}")
    return value


def _patch(value: Any, where: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ApiError(400, f"{where} must be a JSON object (an RFC 7396 merge patch of the configuration)")
    if not value:
        raise ApiError(400, f"{where} is empty; it would change nothing")
    return value


def parse_targets(value: Any) -> Union[str, List[str]]:
    if value == "all":
        return "all"
    if not isinstance(value, list) or not value:
        raise ApiError(400, 'devices must be "all" or a non-empty list of device ids')
    if len(value) > MAX_TARGETS:
        raise ApiError(400, f"devices may list at most {MAX_TARGETS} ids")
    for item in value:
        if not isinstance(item, str):
            raise ApiError(400, f"devices must hold device ids (strings), got {item!r:.80}")
        _device_id(item)
    return value


def fleet_blueprint(service: FleetService) -> Blueprint:
    bp = Blueprint("fleet", __name__)

    @bp.get("/api/v1/status")
    def status() -> Response:
        return jsonify(service.status().to_dict())

    @bp.get("/api/v1/devices")
    def devices() -> Response:
        state = request.args.get("state") or None
        if state not in (None, "online", "offline"):
            raise ApiError(400, f"state must be online or offline, got {state[:80]!r}")
        problem = request.args.get("problem") or None
        if problem not in (None, *PROBLEM_FILTERS):
            raise ApiError(400, f"problem must be one of {', '.join(PROBLEM_FILTERS)}, got {problem[:80]!r}")
        sort = request.args.get("sort") or None
        if sort not in (None, "id", "problems"):
            raise ApiError(400, f"sort must be id or problems, got {sort[:80]!r}")
        limit = integer_arg(request.args, "limit", DEFAULT_PAGE, 1, MAX_PAGE)
        after = request.args.get("after") or None
        if after is not None:
            _device_id(after)
        return jsonify(service.devices(state, limit, after, problem, sort).to_dict())

    @bp.get("/api/v1/devices/<device_id>")
    def device(device_id: str) -> Response:
        found = service.device(_device_id(device_id))
        if found is None:
            raise ApiError(404, f"unknown device {device_id!r}")
        return jsonify(found.to_dict())

    @bp.get("/api/v1/events")
    def events() -> Response:
        query = event_query(request.args)
        device_id = request.args.get("device") or None
        if device_id is not None:
            _device_id(device_id)
        return jsonify({"events": service.events(query, device_id)})

    @bp.patch("/api/v1/devices/<device_id>/config")
    def patch_device(device_id: str) -> Response:
        _device_id(device_id)
        patch = _patch(read_json_body(), "the body")
        try:
            rollout = service.start_rollout([device_id], patch)
        except UnknownDevices:
            raise ApiError(404, f"unknown device {device_id!r}") from None
        response = jsonify({"version": rollout.versions[device_id], "rollout_id": rollout.rollout_id})
        response.status_code = 202
        return response

    @bp.delete("/api/v1/devices/<device_id>")
    def delete_device(device_id: str) -> Response:
        """A device and everything stored of it (admin token); it comes back if it goes on publishing."""
        _device_id(device_id)
        if not service.remove_device(device_id):
            raise ApiError(404, f"unknown device {device_id!r}")
        return jsonify({"deleted": device_id})

    @bp.post("/api/v1/devices/<device_id>/config/reset")
    def reset_device(device_id: str) -> Response:
        _device_id(device_id)
        body = read_json_body()
        if not isinstance(body, dict) or set(body) != {"version"}:
            raise ApiError(400, 'the body must be {"version": N}: the version the device is at now (0 after a reset on it)')
        try:
            cancelled = service.reset_version(device_id, body["version"])
        except ValueError as err:
            raise ApiError(400, str(err)) from None
        except UnknownDevices:
            raise ApiError(404, f"unknown device {device_id!r}") from None
        return jsonify({"device_id": device_id, "version": body["version"], "cancelled": cancelled})

    @bp.patch("/api/v1/fleet/config")
    def patch_fleet() -> Response:
        body = read_json_body()
        if not isinstance(body, dict) or set(body) - {"devices", "patch"} or "patch" not in body or "devices" not in body:
            raise ApiError(400, 'the body must be {"devices": [...] | "all", "patch": {...}}')
        targets = parse_targets(body["devices"])
        patch = _patch(body["patch"], "patch")
        try:
            rollout = service.start_rollout(targets, patch)
        except UnknownDevices as err:
            raise ApiError(400, f"unknown device(s): {', '.join(err.device_ids[:20])}") from None
        response = jsonify({"versions": rollout.versions, "rollout_id": rollout.rollout_id})
        response.status_code = 202
        return response

    @bp.get("/api/v1/rollouts")
    def rollouts() -> Response:
        return jsonify({"rollouts": service.rollouts()})

    @bp.get("/api/v1/rollouts/<rollout_id>")
    def rollout(rollout_id: str) -> Response:
        if not ROLLOUT_ID.fullmatch(rollout_id):
            raise ApiError(400, f"a rollout id is 32 hexadecimal digits, got {rollout_id[:80]!r}")
        found = service.rollout(rollout_id)
        if found is None:
            raise ApiError(404, f"unknown rollout {rollout_id!r}")
        return jsonify(found)

    return bp
