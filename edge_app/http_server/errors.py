"""Every error the API and the fleet service answer is a JSON object ``{"error": "<sentence>", ...}``.

That includes Flask's own 404/405/413 and any uncaught exception: a client (or a curl user)
must never get an HTML page or a traceback from the server.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from edge_app.config.redact import mask_secrets

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """Raised by a route to answer ``status`` with a JSON error body."""

    def __init__(
        self,
        status: int,
        message: str,
        details: Optional[List[Dict[str, str]]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details
        self.headers = dict(headers or {})


def error_response(status: int, message: str, headers: Optional[Mapping[str, str]] = None, **extra: Any) -> Response:
    """A JSON error response; ``extra`` keys are added beside ``error``."""
    # Messages may carry configured values (a camera source in a problem): never a credential.
    body: Dict[str, Any] = {"error": mask_secrets(message)}
    body.update(extra)
    response = jsonify(body)
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _http_message(err: HTTPException) -> str:
    """One clear sentence for Flask's own errors instead of their HTML descriptions."""
    code = err.code or 500
    if code == 404:
        return f"no such resource: {request.path}"
    if code == 405:
        allowed = ", ".join(sorted(m for m in (err.valid_methods or []) if m not in ("HEAD", "OPTIONS")))  # type: ignore[attr-defined]
        suffix = f"; allowed: {allowed}" if allowed else ""
        return f"method {request.method} is not allowed on {request.path}{suffix}"
    if code == 413:
        limit = request.max_content_length
        limit_text = f" of {limit} bytes" if limit is not None else ""
        return f"the request body is larger than the limit{limit_text} (api.max_body_bytes)"
    if code == 415:
        return "the request body must be JSON (Content-Type: application/json)"
    return (err.description or err.name or "error").strip().rstrip(".")


def register_error_handlers(app: Flask) -> None:
    """Install the JSON error handlers on ``app``."""

    @app.errorhandler(ApiError)
    def _api_error(err: ApiError) -> Response:
        details = None if err.details is None else [{k: mask_secrets(str(v)) for k, v in item.items()} for item in err.details]
        extra = {"details": details} if details is not None else {}
        return error_response(err.status, err.message, err.headers, **extra)

    @app.errorhandler(HTTPException)
    def _http_error(err: HTTPException) -> Response:
        headers = {k: v for k, v in err.get_headers() if k.lower() != "content-type"}
        return error_response(err.code or 500, _http_message(err), headers)

    @app.errorhandler(Exception)
    def _unexpected(err: Exception) -> Response:
        # The traceback goes to the log for the operator; the client gets a sentence only.
        logger.exception("unhandled error in %s %s", request.method, request.path)
        return error_response(500, "internal error; the appliance log has the details")
