"""``GET``/``PUT``/``PATCH /api/v1/config``: read, replace or merge-patch the running configuration.

A write is validated completely before the appliance sees it: an invalid body answers 400 with
every problem and changes nothing, neither the config file nor the running appliance. The rules
are those of :class:`edge_app.api.config_writer.ConfigWriter`, shared with the camera routes.
"""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from edge_app.api.config_writer import ConfigWriter
from edge_app.http_server.json_body import read_json_body
from edge_app.config.file import redacted_dict
from edge_app.reporting.protocol import ApplyResult


def _answer(result: ApplyResult) -> Response:
    body = redacted_dict(result.config)
    body["restart_required"] = list(result.restart_required)
    # A new model loads after the answer; GET /api/v1/status shows model_change until it runs.
    body["applying"] = list(result.applying)
    return jsonify(body)


def config_blueprint(writer: ConfigWriter) -> Blueprint:
    bp = Blueprint("config", __name__)

    @bp.get("/api/v1/config")
    def get_config() -> Response:
        return jsonify(redacted_dict(writer.current()))

    @bp.put("/api/v1/config")
    def put_config() -> Response:
        body = read_json_body()
        return _answer(writer.write(lambda current: body))

    @bp.patch("/api/v1/config")
    def patch_config() -> Response:
        # The same change path as the fleet's R/config/desired (edge_app.config_change.changes).
        return _answer(writer.patch(read_json_body()))

    return bp
