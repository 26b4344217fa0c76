"""``GET /api/v1/review`` and ``POST /api/v1/review/reviewed``: review items and their marks (docs/review.md).

Every filter is checked before the database sees it, by the rules of ``/api/v1/events`` (a camera
id or zone name, a label), and a bad value is a 400 naming it: a page past ``MAX_PAGE``, an id
that cannot be one, a day that is no date. Values reach SQL only as bound parameters.
"""
from __future__ import annotations

import math
import re
from datetime import date, datetime, time as day_start, timedelta
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from flask import Blueprint, Response, jsonify, request

from edge_app.api.answers import ReviewMarked
from edge_app.api.request_models import MAX_IDS, ReviewFilters, ReviewMark, ReviewListQuery
from edge_app.api.routing import RequestBody, ResponseSpec, Route, error, ref, register_routes
from edge_app.events.query import EVENT_ID_PATTERN, valid_event_id
from edge_app.http_server.errors import ApiError, error_response
from edge_app.http_server.event_params import checked_label
from edge_app.http_server.json_body import read_json_body
from edge_app.http_server.query_params import NAME, flag_arg, integer_arg, parse_time, text_arg
from edge_app.reporting.protocol import ApplianceReads
from edge_app.review.book import ReviewBook, ReviewUnavailable
from edge_app.review.model import ALERT, DETECTION
from edge_app.review.query import MAX_PAGE, ReviewPage, ReviewQuery

RETRY_AFTER_S = 5
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_FIRST_YEAR, _LAST_YEAR = 1970, 2999
#: the filters both routes take (the GET also ``reviewed`` and ``page``)
FILTERS = tuple(ReviewFilters.model_fields)
_BODY_KEYS = frozenset(ReviewMark.model_fields)


def _severity(raw: Optional[str]) -> Optional[str]:
    if raw is None or raw == "":
        return None
    if raw not in (ALERT, DETECTION):
        raise ApiError(400, f"severity must be {ALERT} or {DETECTION}, got {raw[:80]!r}")
    return raw


def day_bounds(raw: Optional[str]) -> Tuple[Optional[float], Optional[float]]:
    """A local date (YYYY-MM-DD, the appliance's time zone) as [its midnight, the next midnight)."""
    if raw is None or raw == "":
        return None, None
    problem = f"day must be a date YYYY-MM-DD from {_FIRST_YEAR} to {_LAST_YEAR}, got {raw[:80]!r}"
    if not _DAY.fullmatch(raw):
        raise ApiError(400, problem)
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        raise ApiError(400, problem) from None
    if not _FIRST_YEAR <= day.year <= _LAST_YEAR:
        raise ApiError(400, problem)
    # Local midnights: a day with a clock change is 23 or 25 hours long.
    first = datetime.combine(day, day_start()).timestamp()
    return first, datetime.combine(day + timedelta(days=1), day_start()).timestamp()


def review_query(get: Callable[[str], Optional[str]], page: int = 1, reviewed: Optional[bool] = None) -> ReviewQuery:
    after, before = day_bounds(get("day"))
    args = {name: value for name in ("camera", "zone") if (value := get(name)) is not None}
    return ReviewQuery(camera=text_arg(args, "camera", NAME), label=checked_label(get("label")),
                       zone=text_arg(args, "zone", NAME), severity=_severity(get("severity")), reviewed=reviewed,
                       after=after, before=before, page=page)


def query_of_args(args: Mapping[str, str]) -> ReviewQuery:
    """The filters of ``GET /api/v1/review``; raises ApiError (400) for a bad parameter."""
    reviewed = None if args.get("reviewed") in (None, "") else flag_arg(args, "reviewed", False)
    return review_query(args.get, integer_arg(args, "page", 1, 1, MAX_PAGE), reviewed)


def _body_text(body: Dict[str, Any], name: str) -> Optional[str]:
    value = body.get(name)
    if value is None or isinstance(value, str):
        return value
    raise ApiError(400, f"{name} must be a string, got {type(value).__name__}")


def _ids(value: Any) -> List[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_IDS:
        raise ApiError(400, f"ids must be a list of 1 to {MAX_IDS} review item ids")
    for item_id in value:
        if not isinstance(item_id, str) or not valid_event_id(item_id):
            shown = item_id[:80] if isinstance(item_id, str) else type(item_id).__name__
            raise ApiError(400, f"a review item id must match {EVENT_ID_PATTERN}, got {shown!r}")
    return value


def _before(value: Any) -> float:
    if isinstance(value, str):
        return parse_time(value, "before")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1e11:
        return float(value)
    raise ApiError(400, "before must be Unix seconds (a number) or an ISO 8601 date and time")


def _mark(book: ReviewBook, body: Any) -> int:
    if not isinstance(body, dict):
        raise ApiError(400, 'the body must be a JSON object: {"ids": [...]} or {"before": <time>, ...filters}')
    unknown = sorted(set(body) - _BODY_KEYS)
    if unknown:
        raise ApiError(400, f"unknown keys {unknown[:5]}; the body takes ids, or before with {', '.join(FILTERS)}; "
                            "and reviewed (true or false)")
    reviewed = body.get("reviewed", True)
    if not isinstance(reviewed, bool):
        raise ApiError(400, "reviewed must be true or false")
    if ("ids" in body) == ("before" in body):
        raise ApiError(400, 'send either "ids" (items to mark) or "before" (every item of the filters up to a time)')
    if "ids" in body:
        if any(name in body for name in FILTERS):
            raise ApiError(400, "filters go with before, not with ids")
        return book.mark(_ids(body["ids"]), reviewed)
    before = _before(body["before"])
    return book.mark_until(before, review_query(lambda name: _body_text(body, name)), reviewed)


def _unavailable(err: ReviewUnavailable) -> Response:
    return error_response(503, str(err), {"Retry-After": str(RETRY_AFTER_S)})


def list_items(reads: ApplianceReads) -> Response:
    query = query_of_args(request.args)
    book = reads.reviews()
    page = book.page(query) if book is not None else ReviewPage((), 0, query.page)
    return jsonify(page.to_dict())


def mark_reviewed(reads: ApplianceReads) -> Response:
    body = read_json_body()
    book = reads.reviews()
    if book is None:
        raise ApiError(404, "this appliance keeps no event database, so it has no review items to mark")
    return jsonify(ReviewMarked(changed=_mark(book, body)).model_dump())


_UNAVAILABLE = error("The event database cannot be read or written now",
                     **{"Retry-After": "Seconds until asking again is worth it"})

#: the endpoint is ``review.<view name>``
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/review", list_items, "Review items (a camera's events grouped by activity), newest first",
          "review", {200: ResponseSpec("A page of items and the total", ref("ReviewPage")),
                     400: error("Bad query parameter"), 503: _UNAVAILABLE}, query=ReviewListQuery),
    Route("POST", "/api/v1/review/reviewed", mark_reviewed,
          "Mark review items reviewed (or not): by id, or all of the filters up to a time", "review",
          {200: ResponseSpec("Marked", ReviewMarked), 400: error("Bad body: unknown keys, a bad id or time"),
           404: error("The appliance keeps no event database"), 413: error("Body larger than api.max_body_bytes"),
           415: error("Body is not JSON"), 503: _UNAVAILABLE}, body=RequestBody(ReviewMark)),
)


def review_blueprint(reads: ApplianceReads) -> Blueprint:
    bp = Blueprint("review", __name__)
    bp.register_error_handler(ReviewUnavailable, _unavailable)
    return register_routes(bp, ROUTES, reads)
