"""Reading a JSON request body: within the body limit, strict JSON, bounded nesting.

Every route that takes a JSON body reads it here, so they all answer the same 413, 415 and 400.
"""
from __future__ import annotations

import json
from typing import Any

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from edge_app.http_server.errors import ApiError
from edge_app.finite_json import loads_finite

#: Deepest JSON nesting accepted; a configuration is four levels deep, and deeper input would only
#: exhaust the recursion of the parser and the merge (a 500 instead of a 400).
MAX_JSON_DEPTH = 32


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
        # NaN, Infinity and 1e400 (read as infinity) would slip through range checks.
        value = loads_finite(raw)
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


__all__ = ["MAX_JSON_DEPTH", "read_body_bytes", "read_json_body"]
