"""Query-parameter rules shared by the API's routes, each written once.

A parameter left out or empty takes its default; anything else is checked before use and a bad
value is a 400 naming the parameter, never a server error.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional

from edge_app.http_server.errors import ApiError

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # camera ids and zone names (docs/configuration.md)
LARGEST_TIME_S = 1e11  # Unix seconds, the year 5138: beyond it a number is a mistake
#: more digits than any bound of an integer parameter; int() refuses thousands of them with a ValueError
MAX_INTEGER_DIGITS = 18
#: a decimal number's text, at most (float() of thousands of digits is slow, and no client needs them)
MAX_NUMBER_CHARS = 32


def integer_arg(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """``name`` as plain ASCII digits from ``low`` to ``high`` (int() would also take "+5", "1_0",
    " 5" and other scripts' digits)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_INTEGER_DIGITS and low <= int(raw) <= high):
        raise ApiError(400, f"{name} must be an integer from {low} to {high}, got {raw[:80]!r}")
    return int(raw)


def number_arg(args: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    """``name`` as an ASCII decimal number from ``low`` to ``high`` (float() would also take other
    scripts' digits; nan and inf are outside every range)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw) if raw.isascii() and len(raw) <= MAX_NUMBER_CHARS else None
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ApiError(400, f"{name} must be a number from {low:g} to {high:g}, got {raw[:80]!r}")
    return value


def text_arg(args: Mapping[str, str], name: str, pattern: "re.Pattern[str]") -> Optional[str]:
    """``name`` when it matches ``pattern`` whole (camera ids and zone names: ``NAME``)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    if not pattern.fullmatch(raw):
        raise ApiError(400, f"{name} must match {pattern.pattern}, got {raw[:80]!r}")
    return raw


def flag_arg(args: Mapping[str, str], name: str, default: bool) -> bool:
    """``name`` as 0 or 1 (docs/rest-api.md); anything else is refused rather than guessed at."""
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    if raw not in ("0", "1"):
        raise ApiError(400, f"{name} must be 0 or 1, got {raw[:80]!r}")
    return raw == "1"
