"""Query-parameter rules shared by the API's and the fleet service's routes, each written once.

A time is Unix seconds (``1733356800`` or ``1733356800.5``) or ISO 8601 with a date and a time
(``2026-12-04T22:00:00Z``); one without a zone is UTC.

A parameter left out or empty takes its default; anything else is checked before use and a bad
value is a 400 naming the parameter, never a server error.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Dict, Mapping, Optional, Type, TypeVar

from pydantic import BaseModel, ValidationError

from edge_app.http_server.errors import ApiError

Model = TypeVar("Model", bound=BaseModel)

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # camera ids and zone names (docs/configuration.md)
LARGEST_TIME_S = 1e11  # Unix seconds, the year 5138: beyond it a number is a mistake
UNIX_TIME = r"[0-9]{1,11}(\.[0-9]{1,9})?"  # str(time.time()) has up to 7 decimals
ISO_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}:[0-9]{2})?"
TIME_PATTERN = f"^({UNIX_TIME}|{ISO_TIME})$"
_TIME = re.compile(TIME_PATTERN)
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


def parse_time(raw: str, name: str) -> float:
    """Unix seconds from a parameter's text; ApiError (400) naming ``name`` otherwise."""
    problem = f"{name} must be Unix seconds or an ISO 8601 date and time (2026-12-04T22:00:00Z), got {raw[:80]!r}"
    if not _TIME.fullmatch(raw):
        raise ApiError(400, problem)
    if "-" not in raw:
        value = float(raw)
    else:
        try:
            moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise ApiError(400, problem) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        value = moment.timestamp()
    if not 0 <= value <= LARGEST_TIME_S:
        raise ApiError(400, f"{name} must lie between 1970 and the year 5138, got {raw[:80]!r}")
    return value


def problem_sentence(err: ValidationError) -> str:
    """The 400 sentence of a failed validation: the first broken rule's own sentence (a validator's
    ValueError names its parameter), else where and what pydantic says."""
    first = err.errors(include_url=False)[0]
    if first["type"] == "value_error":
        return str(first["ctx"]["error"])
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def parse_query(model: Type[Model], args: Mapping[str, str]) -> Model:
    """The parameters ``model`` names, from ``args`` (the first of repeated ones); one left out or
    empty takes its default (what an HTML form sends for a field left blank). A broken rule is
    ApiError (400) with the rule's sentence, which names the parameter."""
    given: Dict[str, str] = {}
    for key, field_info in model.model_fields.items():
        name = field_info.alias or key
        value = args.get(name)
        if value:
            given[name] = value
    try:
        return model.model_validate(given)
    except ValidationError as err:
        raise ApiError(400, problem_sentence(err)) from None
