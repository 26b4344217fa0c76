"""``GET /api/v1/status`` (device, model, MQTT, cameras, pipeline, health) and ``GET /api/v1/health/device``."""
from __future__ import annotations

from functools import partial

from flask import Blueprint, Response, jsonify

from edge_app.reporting.protocol import ApplianceReads


def status(reads: ApplianceReads) -> Response:
    return jsonify(reads.status().to_dict())


def device_health(reads: ApplianceReads) -> Response:
    # The latest sample: a hung sensor delays the sampler's thread, never this answer.
    return jsonify(reads.device_health().to_dict())


def status_blueprint(reads: ApplianceReads) -> Blueprint:
    bp = Blueprint("status", __name__)
    bp.add_url_rule("/api/v1/status", "status", partial(status, reads), methods=["GET"])
    bp.add_url_rule("/api/v1/health/device", "device_health", partial(device_health, reads), methods=["GET"])
    return bp
