"""``create_fleet_app``: the fleet's Flask app, behind the same host check, auth and errors as the appliance's API.

The server around it is the appliance's too, :class:`edge_app.http_server.server.ApiServer` (cheroot, TLS,
the limits of :mod:`edge_app.http_server.http_limits`), so both answer a LAN the same way.
"""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Optional

from flask import Blueprint, Flask, Request, Response, request

from edge_app.http_server.auth import install_auth
from edge_app.http_server.errors import error_response, register_error_handlers
from edge_app.http_server.headers import install_common_headers
from edge_app.http_server.probes import health_blueprint
from edge_app.http_server.hosts import install_host_check
from edge_app.http_server.json_provider import install_json_provider
from edge_app.http_server.http_limits import DEFAULT_LIMITS
from edge_app.http_server.server import ApiServer
from edge_app.http_server.static_pages import static_page_blueprint
from edge_app.fleet_service.appliance_api import ApplianceApi
from edge_app.fleet_service.artifact_routes import (DEVICE_ENDPOINTS, UPLOAD_ENDPOINTS, UPLOAD_PATH_PREFIXES,
                                                     artifacts_blueprint)
from edge_app.fleet_service.clip_routes import clip_blueprint
from edge_app.fleet_service.db import DatabaseError
from edge_app.fleet_service.device_auth import DeviceAuth
from edge_app.fleet_service.route_state import FleetRouteState, install_route_state
from edge_app.fleet_service.routes import fleet_blueprint
from edge_app.fleet_service.fleet import MIB, FleetService

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"


def fleet_page_blueprint() -> Blueprint:
    return static_page_blueprint("fleet_page", STATIC_DIR)


class _FleetRequest(Request):
    """api.max_body_bytes for every route but the uploads of model files and engines."""

    upload_limit_bytes = 0
    body_limit_bytes = 0

    @property
    def max_content_length(self) -> Optional[int]:  # type: ignore[override]
        return self.upload_limit_bytes if self.endpoint in UPLOAD_ENDPOINTS else self.body_limit_bytes


def _asks_as_device() -> bool:
    return request.endpoint in DEVICE_ENDPOINTS and DeviceAuth.asks_as_device()


def _database_away(err: DatabaseError) -> Response:
    logger.error("%s", err)
    return error_response(503, "the fleet database is unavailable; the service log has the details")


def _close_after_refused_upload(response: Response) -> Response:
    # The server would otherwise read the rest of a refused upload (up to gigabytes) to keep
    # the connection; closing it is cheaper for both sides.
    if response.status_code >= 400 and request.endpoint in UPLOAD_ENDPOINTS:
        response.headers["Connection"] = "close"
    return response


def create_fleet_app(service: FleetService) -> Flask:
    app = Flask(__name__, static_folder=None)
    install_json_provider(app)
    config = service.config
    app.request_class = type("FleetRequest", (_FleetRequest,), {
        "upload_limit_bytes": config.artifacts.max_upload_mb * MIB, "body_limit_bytes": config.api.max_body_bytes})
    app.config["MAX_CONTENT_LENGTH"] = config.api.max_body_bytes
    install_host_check(app, service.current_config)  # type: ignore[arg-type]
    # Device routes asked with X-Edge-Device check the device's own token (device_auth) instead.
    install_auth(app, service.current_config, authenticated_elsewhere=_asks_as_device)  # type: ignore[arg-type]
    register_error_handlers(app)
    app.register_error_handler(DatabaseError, _database_away)

    app.register_blueprint(health_blueprint(service))  # type: ignore[arg-type]
    install_route_state(app, FleetRouteState(service, DeviceAuth(lambda: service.config.device_tokens),
                                             ApplianceApi(service.current_config)))  # type: ignore[arg-type]
    app.register_blueprint(fleet_blueprint())
    app.register_blueprint(artifacts_blueprint())
    app.register_blueprint(clip_blueprint())
    app.register_blueprint(fleet_page_blueprint())

    install_common_headers(app)
    app.after_request(_close_after_refused_upload)

    return app


def fleet_server(service: FleetService, app: Optional[Flask] = None) -> ApiServer:
    """The fleet's HTTP server: uploads of model files and engines may be larger and slower than
    other requests (artifacts.max_upload_mb, artifacts.upload_deadline_s); every other request's
    body is refused above api.max_body_bytes by the server before it is read. Under the upload
    paths each route's own limit is then checked by the app, after authentication, before the body
    is read; an upload's body is streamed to disk only once its route has accepted the request."""
    config = service.config
    limits = dataclasses.replace(DEFAULT_LIMITS, upload_deadline_s=config.artifacts.upload_deadline_s,
                                 upload_path_prefixes=UPLOAD_PATH_PREFIXES,
                                 body_limit_setting="artifacts.max_upload_mb for uploads, api.max_body_bytes otherwise")
    upload_bytes = max(config.api.max_body_bytes, config.artifacts.max_upload_mb * MIB)
    return ApiServer.from_config(app or create_fleet_app(service), config.api, limits=limits,
                                 body_limit_bytes=lambda: config.api.max_body_bytes,
                                 upload_body_limit_bytes=lambda: upload_bytes)
