"""What the fleet's views depend on, attached to the app once, and the table their blueprints are built from.

The views are plain module-level functions: each reads the service, the device check and the
appliance client from ``route_state()`` (``current_app.extensions["fleet"]``) instead of from a
closure, so a view can be read, tested and listed on its own.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from flask import Blueprint, Flask, Response, current_app, jsonify

from edge_app.fleet_service.appliance_api import ApplianceApi
from edge_app.fleet_service.device_auth import DeviceAuth
from edge_app.fleet_service.fleet import FleetService

EXTENSION = "fleet"


@dataclass(frozen=True)
class FleetRouteState:
    """The fleet's routes' dependencies: the service, who a device is, and the appliances' own APIs."""

    service: FleetService
    device_auth: DeviceAuth
    appliances: ApplianceApi


def install_route_state(app: Flask, state: FleetRouteState) -> None:
    app.extensions[EXTENSION] = state


def route_state() -> FleetRouteState:
    """The state of the app serving the current request."""
    return current_app.extensions[EXTENSION]


@dataclass(frozen=True)
class Route:
    """One route: its method, its path, and the view answering it (the view's name is its endpoint)."""

    method: str
    path: str
    view: Callable[..., Response]


def blueprint_of(name: str, import_name: str, routes: Iterable[Route]) -> Blueprint:
    blueprint = Blueprint(name, import_name)
    for route in routes:
        blueprint.add_url_rule(route.path, view_func=route.view, methods=[route.method])
    return blueprint


def json_response(body: Any, status: int = 200) -> Response:
    """``body`` (a dataclass of the response models) as JSON; the fields are taken as they are, not copied."""
    response = jsonify({field.name: getattr(body, field.name) for field in dataclasses.fields(body)})
    response.status_code = status
    return response
