"""Headers every answer of an edge-app server carries (the appliance's API and the fleet service)."""
from __future__ import annotations

import logging

from flask import Flask, Response, request

logger = logging.getLogger(__name__)


def install_common_headers(app: Flask) -> None:
    """``nosniff`` on every answer, ``no-store`` on every ``/api/v1/`` one."""

    @app.after_request
    def _common_headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        # Status, config and detections change all the time; a cached copy is a wrong answer.
        if request.path.startswith("/api/v1/"):
            response.headers.setdefault("Cache-Control", "no-store")
        logger.debug("%s %s -> %s", request.method, request.path, response.status_code)
        return response
