"""``GET``/``PUT``/``PATCH /api/v1/config``: read, replace or merge-patch the running configuration.

A write is validated completely before the appliance sees it: an invalid body answers 400 with
every problem and changes nothing, neither the config file nor the running appliance.
"""
from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from edge_app.api.errors import ApiError
from edge_app.service import ApplianceService
from edge_app.checks import check_runtime
from edge_app.config.policy import unsafe_changes
from edge_app.config.schema import AppConfig
from edge_app.config.secrets import misdirected_secrets, restore_secrets
from edge_app.config.store import ConfigError, Problem, merge_patch, parse_config, redacted_dict

logger = logging.getLogger(__name__)

#: Deepest JSON nesting accepted; a configuration is four levels deep, and deeper input would only
#: exhaust the recursion of the parser and the merge (a 500 instead of a 400).
MAX_JSON_DEPTH = 32


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
        value = json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ApiError(400, f"the request body is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ApiError(400, f"the request body is not valid JSON: {err}") from None
    except RecursionError:
        raise ApiError(400, f"the request body is nested deeper than {MAX_JSON_DEPTH} levels") from None
    if _nesting_depth(value) > MAX_JSON_DEPTH:
        raise ApiError(400, f"the request body is nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _nesting_depth(value: Any) -> int:
    """How deeply objects and arrays nest in a decoded JSON value; iterative, so any depth is safe."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


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

    def refuse(what: str, problems: List[Problem]) -> ApiError:
        return ApiError(400, f"{what}: {_summary(problems)}", _problem_details(problems))

    def validate_and_apply(data: Any, current: AppConfig) -> Response:
        """Everything is checked before the appliance sees the change: all or nothing."""
        data, restored, problems = restore_secrets(data, current)
        if problems:
            raise refuse("the configuration is refused", problems)
        try:
            new_config = parse_config(data)
        except ConfigError as err:
            raise refuse("the configuration is invalid", err.problems) from None
        problems = misdirected_secrets(new_config, current, restored) + unsafe_changes(current, new_config, Path.cwd())
        if problems:
            raise refuse("the configuration is refused", problems)
        problems = check_runtime(new_config, previous=current)
        if problems:
            raise refuse("the configuration cannot run here", problems)
        try:
            result = service.apply_config(new_config)
        except ConfigError as err:
            raise refuse("the configuration cannot be applied", err.problems) from None
        if result.restart_required:
            logger.info("configuration applied; these settings take effect after a restart: %s", ", ".join(result.restart_required))
        else:
            logger.info("configuration applied")
        body = redacted_dict(result.config)
        body["restart_required"] = list(result.restart_required)
        # A new model loads after the answer; GET /api/v1/status shows model_change until it runs.
        body["applying"] = list(result.applying)
        return jsonify(body)

    @bp.get("/api/v1/config")
    def get_config() -> Response:
        return jsonify(redacted_dict(config_getter()))

    @bp.put("/api/v1/config")
    def put_config() -> Response:
        body = read_json_body()
        with write_lock:
            # A client that GETs, edits and PUTs back sends "***" for secrets: they are filled in
            # from the running configuration where their destination did not change.
            return validate_and_apply(body, config_getter())

    @bp.patch("/api/v1/config")
    def patch_config() -> Response:
        patch = read_json_body()
        with write_lock:
            current = config_getter()
            # The patch applies to the view the client sees, secrets masked, and goes through the
            # same re-entry rule as PUT: a patch that moves the broker without the password is
            # refused rather than sending the stored password to the new broker.
            return validate_and_apply(merge_patch(redacted_dict(current), patch), current)

    return bp
