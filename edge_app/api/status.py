"""``GET /api/v1/status`` (device, model, MQTT, cameras, pipeline, health) and ``GET /api/v1/health/device``."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from edge_app.reporting.protocol import ApplianceReads


def status_blueprint(reads: ApplianceReads) -> Blueprint:
    bp = Blueprint("status", __name__)

    @bp.get("/api/v1/status")
    def status() -> Response:
        return jsonify(reads.status().to_dict())

    @bp.get("/api/v1/health/device")
    def device_health() -> Response:
        # The latest sample: a hung sensor delays the sampler's thread, never this answer.
        return jsonify(reads.device_health().to_dict())

    return bp
