"""The rules of the review filters that the event filters do not have: a severity and a local day.

Each raises ApiError (400) with a sentence naming the parameter; the request models
(:mod:`edge_app.api.request_models`) check the review routes' values with them.
"""
from __future__ import annotations

import re
from datetime import date, datetime, time as day_start, timedelta
from typing import Optional, Tuple

from edge_app.http_server.errors import ApiError
from edge_app.review.model import ALERT, DETECTION

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
FIRST_YEAR, LAST_YEAR = 1970, 2999


def checked_severity(raw: str) -> Optional[str]:
    if raw == "":
        return None
    if raw not in (ALERT, DETECTION):
        raise ApiError(400, f"severity must be {ALERT} or {DETECTION}, got {raw[:80]!r}")
    return raw


def checked_day(raw: str) -> Optional[date]:
    """A local date YYYY-MM-DD (the appliance's time zone); None when empty."""
    if raw == "":
        return None
    problem = f"day must be a date YYYY-MM-DD from {FIRST_YEAR} to {LAST_YEAR}, got {raw[:80]!r}"
    if not _DAY.fullmatch(raw):
        raise ApiError(400, problem)
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        raise ApiError(400, problem) from None
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise ApiError(400, problem)
    return day


def day_bounds(day: Optional[date]) -> Tuple[Optional[float], Optional[float]]:
    """A local date as [its midnight, the next midnight), in Unix seconds."""
    if day is None:
        return None, None
    # Local midnights: a day with a clock change is 23 or 25 hours long.
    first = datetime.combine(day, day_start()).timestamp()
    return first, datetime.combine(day + timedelta(days=1), day_start()).timestamp()
