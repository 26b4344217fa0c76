"""The query of ``GET /api/v1/events``, the appliance's and the fleet's, and the check of an event id.

Every parameter is checked before a store sees it: a wrong number or limit is a 400 with a
sentence saying which parameter, and an event id must look like one (it never becomes a path).
The fleet service reads its query with :func:`event_query`; the appliance's query model
(``edge_app.api.request_models.EventFilters``) checks each parameter by the same rules, and both
check the range with :func:`checked_event_query`.
"""
from __future__ import annotations

from typing import Mapping, Optional

from edge_app.config.schema_rules import label_problem
from edge_app.events.query import DEFAULT_LIMIT, EVENT_ID_PATTERN, MAX_LIMIT, EventQuery, valid_event_id
from edge_app.http_server.errors import ApiError
from edge_app.http_server.query_params import NAME, integer_arg, parse_time, text_arg


def checked_label(raw: Optional[str]) -> Optional[str]:
    """A ``label`` filter exactly as a label may be (class names hold spaces: "traffic light"), by
    the configuration's rule; None when empty. Raises ApiError (400)."""
    if raw is None or raw == "":
        return None
    problem = label_problem(raw)
    if problem is not None:
        raise ApiError(400, f"label: {problem}")
    return raw


def _label(args: Mapping[str, str]) -> Optional[str]:
    return checked_label(args.get("label"))


def _time(args: Mapping[str, str], name: str) -> Optional[float]:
    """Unix seconds or ISO 8601, as the recording routes take them (one rule: ``parse_time``)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    return parse_time(raw, name)


def checked_event_query(query: EventQuery) -> EventQuery:
    """``query`` when its range is in order; raises ApiError (400) otherwise."""
    if query.after is not None and query.before is not None and query.after > query.before:
        raise ApiError(400, f"after ({query.after:g}) must be earlier than before ({query.before:g})")
    return query


def event_query(args: Mapping[str, str]) -> EventQuery:
    """The filters of ``GET /api/v1/events``; raises ApiError (400) for a bad parameter."""
    return checked_event_query(EventQuery(
        camera=text_arg(args, "camera", NAME), label=_label(args), zone=text_arg(args, "zone", NAME),
        after=_time(args, "after"), before=_time(args, "before"),
        limit=integer_arg(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)))


def checked_event_id(event_id: str) -> str:
    if not valid_event_id(event_id):
        raise ApiError(400, f"an event id must match {EVENT_ID_PATTERN}, got {event_id[:80]!r}")
    return event_id
