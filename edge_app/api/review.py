"""``GET /api/v1/review`` and ``POST /api/v1/review/reviewed``: review items and their marks (docs/review.md).

Every filter is checked by its request model before the database sees it, by the rules of
``/api/v1/events`` (a camera id or zone name, a label), and a bad value is a 400 naming it: a
page past ``MAX_PAGE``, an id that cannot be one, a day that is no date. Values reach SQL only as
bound parameters.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from flask import Blueprint, Response, jsonify
from pydantic import ValidationError

from edge_app.api.answers import ReviewMarked
from edge_app.api.request_models import ReviewFilters, ReviewListQuery, ReviewMark
from edge_app.api.review_params import day_bounds
from edge_app.http_server.query_params import problem_sentence
from edge_app.api.routing import RequestBody, ResponseSpec, Route, error, ref, register_routes
from edge_app.http_server.errors import ApiError, error_response
from edge_app.http_server.json_body import read_json_body
from edge_app.reporting.protocol import ApplianceReads
from edge_app.review.book import ReviewBook, ReviewUnavailable
from edge_app.review.query import ReviewPage, ReviewQuery

RETRY_AFTER_S = 5


def review_query(filters: ReviewFilters, page: int = 1, reviewed: Optional[bool] = None) -> ReviewQuery:
    """The query of filters their model has checked."""
    after, before = day_bounds(filters.day)
    return ReviewQuery(camera=filters.camera, label=filters.label, zone=filters.zone, severity=filters.severity,
                       reviewed=reviewed, after=after, before=before, page=page)


def _mark(book: ReviewBook, body: Any) -> int:
    try:
        mark = ReviewMark.model_validate(body)
    except ValidationError as err:
        raise ApiError(400, problem_sentence(err)) from None
    if mark.ids is not None:
        return book.mark(mark.ids, mark.reviewed)
    before = 0.0 if mark.before is None else mark.before  # the model takes either ids or before
    return book.mark_until(before, review_query(mark), mark.reviewed)


def _unavailable(err: ReviewUnavailable) -> Response:
    return error_response(503, str(err), {"Retry-After": str(RETRY_AFTER_S)})


def list_items(reads: ApplianceReads, wanted: ReviewListQuery) -> Response:
    query = review_query(wanted, wanted.page, wanted.reviewed)
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
