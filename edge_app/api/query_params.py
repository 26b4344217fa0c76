"""Query-parameter rules shared by the API's routes, each written once.

A parameter left out or empty takes its default; anything else is checked before use and a bad
value is a 400 naming the parameter, never a server error.
"""
from __future__ import annotations

from typing import Mapping

from edge_app.api.errors import ApiError

#: more digits than any bound of an integer parameter; int() refuses thousands of them with a ValueError
MAX_INTEGER_DIGITS = 18


def integer_arg(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """``name`` as plain ASCII digits from ``low`` to ``high`` (int() would also take "+5", "1_0",
    " 5" and other scripts' digits)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_INTEGER_DIGITS and low <= int(raw) <= high):
        raise ApiError(400, f"{name} must be an integer from {low} to {high}, got {raw[:80]!r}")
    return int(raw)
