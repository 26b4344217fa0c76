"""``create_fleet_app``: the fleet's Flask app, behind the appliance API's host check, auth and errors.

The server around it is the appliance's :class:`edge_app.api.server.ApiServer` (cheroot, TLS,
the limits of :mod:`edge_app.api.http_limits`), so both answer a LAN the same way.
"""
from __future__ import annotations

import logging
from pathlib import Path

from flask import Blueprint, Flask, Response

from edge_app.api.app import install_common_headers
from edge_app.api.auth import install_auth
from edge_app.api.dashboard import static_page_blueprint
from edge_app.api.errors import error_response, register_error_handlers
from edge_app.api.health import health_blueprint
from edge_app.api.hosts import install_host_check
from edge_app.fleet_service.appliance_api import ApplianceApi
from edge_app.fleet_service.clip_routes import clip_blueprint
from edge_app.fleet_service.db import DatabaseError
from edge_app.fleet_service.routes import fleet_blueprint
from edge_app.fleet_service.service import FleetService

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"


def fleet_page_blueprint() -> Blueprint:
    return static_page_blueprint("fleet_page", STATIC_DIR)


def create_fleet_app(service: FleetService) -> Flask:
    app = Flask(__name__, static_folder=None)
    app.json.sort_keys = False
    app.config["MAX_CONTENT_LENGTH"] = service.config.api.max_body_bytes
    install_host_check(app, service.current_config)  # type: ignore[arg-type]
    install_auth(app, service.current_config)  # type: ignore[arg-type]
    register_error_handlers(app)

    @app.errorhandler(DatabaseError)
    def _database_away(err: DatabaseError) -> Response:
        logger.error("%s", err)
        return error_response(503, "the fleet database is unavailable; the service log has the details")

    app.register_blueprint(health_blueprint(service))  # type: ignore[arg-type]
    app.register_blueprint(fleet_blueprint(service))
    app.register_blueprint(clip_blueprint(ApplianceApi(service.current_config)))
    app.register_blueprint(fleet_page_blueprint())

    install_common_headers(app)

    return app
