"""``GET /api/v1/status`` (device, model, MQTT, cameras, pipeline, health) and ``GET /api/v1/health/device``."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from edge_app.reporting.protocol import ApplianceService


def status_blueprint(service: ApplianceService) -> Blueprint:
    bp = Blueprint("status", __name__)

    @bp.get("/api/v1/status")
    def status() -> Response:
        return jsonify(service.status().to_dict())

    @bp.get("/api/v1/health/device")
    def device_health() -> Response:
        # The latest sample: a hung sensor delays the sampler's thread, never this answer.
        return jsonify(service.device_health().to_dict())

    return bp
