"""``GET /api/v1/status``: device, model, MQTT, cameras and pipeline figures."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from edge_app.reporting.protocol import ApplianceService


def status_blueprint(service: ApplianceService) -> Blueprint:
    bp = Blueprint("status", __name__)

    @bp.get("/api/v1/status")
    def status() -> Response:
        return jsonify(service.status().to_dict())

    return bp
