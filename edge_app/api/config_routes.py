"""``GET``/``PUT``/``PATCH /api/v1/config``: read, replace or merge-patch the running configuration.

A write is validated completely before the appliance sees it: an invalid body answers 400 with
every problem and changes nothing, neither the config file nor the running appliance. The rules
are those of :class:`edge_app.api.config_writer.ConfigWriter`, shared with the camera routes.
"""
from __future__ import annotations

from typing import Tuple

from flask import Blueprint, Response, jsonify

from edge_app.api.config_writer import ConfigWriter
from edge_app.api.routing import MERGE_PATCH, RequestBody, ResponseSpec, Route, error, ref, register_routes
from edge_app.config.schema import AppConfig
from edge_app.http_server.json_body import read_json_body
from edge_app.config.file import redacted_dict
from edge_app.reporting.protocol import ApplyResult


def _answer(result: ApplyResult) -> Response:
    body = redacted_dict(result.config)
    body["restart_required"] = list(result.restart_required)
    # A new model loads after the answer; GET /api/v1/status shows model_change until it runs.
    body["applying"] = list(result.applying)
    return jsonify(body)


def get_config(writer: ConfigWriter) -> Response:
    return jsonify(redacted_dict(writer.current()))


def put_config(writer: ConfigWriter) -> Response:
    body = read_json_body()
    return _answer(writer.write(lambda current: body))


def patch_config(writer: ConfigWriter) -> Response:
    # The same change path as the fleet's R/config/desired (edge_app.config_change.changes).
    return _answer(writer.patch(read_json_body()))


_ANSWERS = {
    200: ResponseSpec("Applied and saved", ref("ConfigAnswer")),
    400: ResponseSpec("Invalid configuration (details locate each problem), or a body that is not JSON; nothing changed",
                      {"anyOf": [ref("ValidationError"), ref("Error")]}),
    413: error("Body larger than api.max_body_bytes"),
    415: error("Body is not JSON"),
}

#: the endpoint is ``config.<view name>``
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/config", get_config, "The running configuration (secrets shown as \"***\")", "config",
          {200: ResponseSpec("Configuration", AppConfig)}),
    Route("PUT", "/api/v1/config", put_config, "Replace the configuration; applied live and saved", "config", _ANSWERS,
          body=RequestBody(AppConfig)),
    Route("PATCH", "/api/v1/config", patch_config, "Merge-patch the configuration; applied live and saved", "config",
          _ANSWERS, body=RequestBody({"type": "object"}, description=(
              "RFC 7396 JSON merge patch; null deletes a key (back to its default). models may be an object instead of "
              "a list: each key (a model's name, or artifact:<fleet model name>) addresses one model, its value a "
              "merge patch of that model (configuration.md, Several models)"), media_types=MERGE_PATCH)),
)


def config_blueprint(writer: ConfigWriter) -> Blueprint:
    return register_routes(Blueprint("config", __name__), ROUTES, writer)
