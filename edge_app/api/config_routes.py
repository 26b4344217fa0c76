"""``GET``/``PUT``/``PATCH /api/v1/config``: read, replace or merge-patch the running configuration.

A write is validated completely before the appliance sees it: an invalid body answers 400 with
every problem and changes nothing, neither the config file nor the running appliance. The rules
are those of :class:`edge_app.api.config_writer.ConfigWriter`, shared with the camera routes.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Tuple

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


def get_config(writer: ConfigWriter) -> Response:
    return jsonify(redacted_dict(writer.current()))


def put_config(writer: ConfigWriter) -> Response:
    body = read_json_body()
    return _answer(writer.write(lambda current: body))


def patch_config(writer: ConfigWriter) -> Response:
    # The same change path as the fleet's R/config/desired (edge_app.config_change.changes).
    return _answer(writer.patch(read_json_body()))


#: (method, view) of /api/v1/config: the endpoint is ``config.<view name>``
ROUTES: Tuple[Tuple[str, Callable[..., Response]], ...] = (
    ("GET", get_config),
    ("PUT", put_config),
    ("PATCH", patch_config),
)


def config_blueprint(writer: ConfigWriter) -> Blueprint:
    bp = Blueprint("config", __name__)
    for method, view in ROUTES:
        bp.add_url_rule("/api/v1/config", view.__name__, partial(view, writer), methods=[method])
    return bp
