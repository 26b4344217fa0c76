"""The query parameters of the recording routes: a camera and a time range, checked before use.

A time is Unix seconds (``1733356800`` or ``1733356800.5``) or ISO 8601 with a date and a time
(``2026-12-04T22:00:00Z``, ``2026-12-04T23:00:00+01:00``); one without a zone is UTC, the zone
the recordings are named in. Only ids and times ever reach the recording store: no parameter
names a file.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Optional

from edge_app.http_server.errors import ApiError
from edge_app.http_server.query_params import NAME, parse_time, text_arg

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


def _camera(args: Mapping[str, str], required: bool) -> Optional[str]:
    camera_id = text_arg(args, "camera", NAME)
    if camera_id is None and required:
        raise ApiError(400, "camera is required: the id of the camera whose recordings to export")
    return camera_id


def time_range(args: Mapping[str, str], *, export: bool, now_s: Optional[float] = None) -> TimeRange:
    """The camera, ``from`` and ``to`` of a listing (both optional: the last day) or of an export
    (all required); ApiError (400) for anything missing, malformed, reversed or too long."""
    camera_id = _camera(args, required=export)
    raw_from, raw_to = args.get("from") or None, args.get("to") or None
    if export and (raw_from is None or raw_to is None):
        raise ApiError(400, "from and to are required: the range to export (Unix seconds or ISO 8601)")
    end = parse_time(raw_to, "to") if raw_to is not None else (time.time() if now_s is None else now_s)
    start = parse_time(raw_from, "from") if raw_from is not None else max(0.0, end - DEFAULT_LIST_S)
    if start >= end:
        raise ApiError(400, f"from ({start:.3f}) must be earlier than to ({end:.3f})")
    longest_s = MAX_EXPORT_S if export else MAX_LIST_S
    if end - start > longest_s:
        what = "an export" if export else "a listing"
        raise ApiError(400, f"{what} spans at most {longest_s:g} s; from and to are {end - start:.0f} s apart")
    return TimeRange(camera_id, start, end)
