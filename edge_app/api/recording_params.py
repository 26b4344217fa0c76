"""The time range of the recording routes: a camera and a range, checked before use.

A time is Unix seconds (``1733356800`` or ``1733356800.5``) or ISO 8601 with a date and a time
(``2026-12-04T22:00:00Z``, ``2026-12-04T23:00:00+01:00``); one without a zone is UTC, the zone
the recordings are named in. The query models (:mod:`edge_app.api.request_models`) check each
parameter; :func:`time_range` what they say together. Only ids and times ever reach the
recording store: no parameter names a file.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from edge_app.http_server.errors import ApiError

DAY_S = 86400.0
#: the default window of a listing when ``from`` is left out: the last day
DEFAULT_LIST_S = DAY_S
#: a listing spans at most a week (a camera with 60 s segments has 10080 in it)
MAX_LIST_S = 7 * DAY_S
#: an export spans at most an hour: about 2 GB at 4 Mbit/s, written to a temporary file first
MAX_EXPORT_S = 3600.0


@dataclass(frozen=True)
class TimeRange:
    camera_id: Optional[str]
    start: float  # Unix seconds
    end: float


CAMERA_REQUIRED = "camera is required: the id of the camera whose recordings to export"
RANGE_REQUIRED = "from and to are required: the range to export (Unix seconds or ISO 8601)"


def time_range(camera_id: Optional[str], start: Optional[float], end: Optional[float], *, export: bool,
               now_s: Optional[float] = None) -> TimeRange:
    """The range of a listing (``start`` and ``end`` optional: the last day) or of an export, from
    values their query model checked one by one; ApiError (400) for one reversed or too long."""
    if end is None:
        end = time.time() if now_s is None else now_s
    if start is None:
        start = max(0.0, end - DEFAULT_LIST_S)
    if start >= end:
        raise ApiError(400, f"from ({start:.3f}) must be earlier than to ({end:.3f})")
    longest_s = MAX_EXPORT_S if export else MAX_LIST_S
    if end - start > longest_s:
        what = "an export" if export else "a listing"
        raise ApiError(400, f"{what} spans at most {longest_s:g} s; from and to are {end - start:.0f} s apart")
    return TimeRange(camera_id, start, end)
