"""``GET``/``PUT``/``PATCH /api/v1/config``: read, replace or merge-patch the running configuration.

A write is validated completely before the appliance sees it: an invalid body answers 400 with
every problem and changes nothing, neither the config file nor the running appliance.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Dict, List

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from edge_app.api.errors import ApiError
from edge_app.api.service import ApplianceService
from edge_app.config.schema import AppConfig
from edge_app.config.store import ConfigError, Problem, config_to_dict, merge_patch, parse_config, redacted_dict, restore_secrets

logger = logging.getLogger(__name__)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_body_bytes() -> bytes:
    """The raw body, at most ``request.max_content_length`` bytes; RequestEntityTooLarge beyond.

    With a Content-Length, Werkzeug refuses an oversized body before reading it. A chunked body
    has none, and Werkzeug would silently cut it at the limit (a truncated body is a confusing
    400), so it is read here up to one byte past the limit to tell "too large" from "just fits".
    """
    limit = request.max_content_length
    if limit is None or request.content_length is not None or not request.environ.get("wsgi.input_terminated"):
        return request.get_data(cache=False)
    stream = request.environ["wsgi.input"]
    chunks, total = [], 0
    while True:
        chunk = stream.read(min(64 * 1024, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise RequestEntityTooLarge()


def read_json_body() -> Any:
    """The request body decoded as JSON, or an ApiError (415 not JSON, 400 malformed, 413 too big)."""
    if not request.is_json:
        raise ApiError(415, "the request body must be JSON (Content-Type: application/json)")
    raw = read_body_bytes()
    if not raw.strip():
        raise ApiError(400, "the request body is empty; send a JSON object")
    try:
        # NaN and Infinity are Python extensions to JSON; they would slip through range checks.
        return json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ApiError(400, f"the request body is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ApiError(400, f"the request body is not valid JSON: {err}") from None


def _problem_details(problems: List[Problem]) -> List[Dict[str, str]]:
    return [problem.as_dict() for problem in problems]


def _summary(problems: List[Problem]) -> str:
    if not problems:
        return "unknown problem"
    more = len(problems) - 1
    return str(problems[0]) + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def config_blueprint(service: ApplianceService, config_getter: Callable[[], AppConfig]) -> Blueprint:
    bp = Blueprint("config", __name__)
    # Read-modify-apply must not interleave: two concurrent PATCHes would otherwise both start
    # from the same configuration and the second would silently undo the first.
    write_lock = threading.Lock()

    def validate_and_apply(data: Any) -> Response:
        try:
            new_config = parse_config(data)
        except ConfigError as err:
            raise ApiError(400, f"the configuration is invalid: {_summary(err.problems)}", _problem_details(err.problems)) from None
        try:
            result = service.apply_config(new_config)
        except ConfigError as err:
            raise ApiError(400, f"the configuration cannot be applied: {_summary(err.problems)}", _problem_details(err.problems)) from None
        if result.restart_required:
            logger.info("configuration applied; these settings take effect after a restart: %s", ", ".join(result.restart_required))
        else:
            logger.info("configuration applied")
        body = redacted_dict(result.config)
        body["restart_required"] = list(result.restart_required)
        return jsonify(body)

    @bp.get("/api/v1/config")
    def get_config() -> Response:
        return jsonify(redacted_dict(config_getter()))

    @bp.put("/api/v1/config")
    def put_config() -> Response:
        body = read_json_body()
        with write_lock:
            current = config_getter()
            # A client that GETs, edits and PUTs back sends "***" for secrets: keep the real ones.
            data = restore_secrets(body, current) if isinstance(body, dict) else body
            return validate_and_apply(data)

    @bp.patch("/api/v1/config")
    def patch_config() -> Response:
        patch = read_json_body()
        with write_lock:
            current = config_getter()
            # The patch applies to the real configuration, not to the redacted view of it, so a
            # patch that does not mention a secret leaves it alone.
            merged = merge_patch(config_to_dict(current), patch)
            data = restore_secrets(merged, current) if isinstance(merged, dict) else merged
            return validate_and_apply(data)

    return bp
