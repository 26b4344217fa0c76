"""Inbound MQTT payloads read as JSON, with a size and a nesting bound checked before parsing.

Anyone who can publish on the broker chooses these bytes. ``json.loads`` recurses once per
nesting level, so a message of nested brackets raises ``RecursionError`` (not ``ValueError``)
somewhere deep inside the parser, and a huge message costs memory before anything can refuse it.
:func:`parse_json_payload` refuses both with a cheap scan first, then parses without NaN,
Infinity or numbers that only a float overflow makes finite-looking, and raises one error type,
:class:`InboundPayloadError`, for everything it refuses.
"""
from __future__ import annotations

import re
from typing import Any

from edge_app.finite_json import loads_finite

#: json.loads recurses per level; far below the interpreter's limit whatever the caller asks for
DEPTH_LIMIT = 200

# A complete JSON string literal; unrolled so it runs in one pass without backtracking.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = frozenset(b"[{")
_BRACKETS = b"[]{}"


class InboundPayloadError(ValueError):
    """A payload refused before or while parsing; ``reason`` says why in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def nesting_depth_exceeds(payload: bytes, max_depth: int) -> bool:
    """True when brackets outside string literals nest deeper than ``max_depth``.

    Stops at the first level too deep, so a message made only of ``[`` costs ``max_depth`` steps.
    Unbalanced or unterminated input is left for the parser to refuse.
    """
    outside_strings = _STRING.sub(b"", payload)
    brackets = outside_strings.translate(None, bytes(b for b in range(256) if b not in _BRACKETS))
    depth = 0
    for char in brackets:
        if char in _OPEN:
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def parse_json_payload(payload: bytes, max_bytes: int, max_depth: int) -> Any:
    """The JSON value in ``payload``; raises :class:`InboundPayloadError` for anything refused.

    Refused: more than ``max_bytes`` bytes, arrays and objects nested deeper than ``max_depth``
    (a scalar is depth 0, ``[]`` depth 1), bytes that are not UTF-8, text that is not JSON,
    ``NaN``/``Infinity`` and numbers beyond a float's range or the interpreter's digit limit.
    """
    if not 0 <= max_depth <= DEPTH_LIMIT:
        raise ValueError(f"max_depth must be from 0 to {DEPTH_LIMIT}, got {max_depth}")
    data = bytes(payload)
    if len(data) > max_bytes:
        raise InboundPayloadError(f"the message is {len(data)} bytes, more than the {max_bytes} allowed")
    if nesting_depth_exceeds(data, max_depth):
        raise InboundPayloadError(f"the message is nested more than {max_depth} levels deep")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InboundPayloadError("the message is not UTF-8 text") from None
    try:
        return loads_finite(text)
    except RecursionError:  # not reachable within DEPTH_LIMIT; kept so the one error type holds
        raise InboundPayloadError("the message is nested too deeply") from None
    except ValueError as err:  # json.JSONDecodeError, refused constants, over-long integers
        raise InboundPayloadError(f"the message is not valid JSON: {str(err)[:200]}") from None


__all__ = ["DEPTH_LIMIT", "InboundPayloadError", "nesting_depth_exceeds", "parse_json_payload"]
