"""The API's JSON error handlers: the shared ones (:mod:`edge_app.http_server.errors`) and a 404 for
a camera the appliance does not have, raised as ``UnknownCamera`` from deep in the read side."""
from __future__ import annotations

from flask import Flask, Response

from edge_app.http_server.errors import error_response, register_error_handlers as register_shared_handlers
from edge_app.reporting.protocol import UnknownCamera


def register_error_handlers(app: Flask) -> None:
    """Install the JSON error handlers on ``app``, ``UnknownCamera`` among them."""
    register_shared_handlers(app)

    # Flask picks the handler of the most specific class, so this wins over the catch-all 500.
    @app.errorhandler(UnknownCamera)
    def _unknown_camera(err: UnknownCamera) -> Response:
        camera_id = err.args[0] if err.args else "?"
        return error_response(404, f"unknown camera {camera_id!r}")
