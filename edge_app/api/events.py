"""``/api/v1/events`` and ``/api/v1/counts``: stored events, their snapshots, and live counts.

Every query parameter is checked before the store sees it: a wrong number or limit is a 400
with a sentence saying which parameter, never a server error, and an event id must look like
one (it never becomes a path: the store keeps its own file names). A database found corrupt is
a 503 saying so, never an empty list that looks like the truth.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping, Optional, Tuple

from flask import Blueprint, Response, jsonify, request

from edge_app.api.errors import ApiError, error_response
from edge_app.api.query_params import NAME, integer_arg, text_arg
from edge_app.api.recording_params import parse_time
from edge_app.config.schema_rules import label_problem
from edge_app.events.query import DEFAULT_LIMIT, EVENT_ID_PATTERN, MAX_LIMIT, EventQuery, valid_event_id
from edge_app.events.recovery import EventDatabaseUnusable
from edge_app.reporting.protocol import ApplianceReads, EventDeletion

RETRY_AFTER_S = 5  # a corrupt database is moved aside and a new one started within moments


def _label(args: Mapping[str, str]) -> Optional[str]:
    # Exactly what a label may be (class names hold spaces: "traffic light"), by the configuration's rule.
    raw = args.get("label")
    if raw is None or raw == "":
        return None
    problem = label_problem(raw)
    if problem is not None:
        raise ApiError(400, f"label: {problem}")
    return raw


def _time(args: Mapping[str, str], name: str) -> Optional[float]:
    """Unix seconds or ISO 8601, as the recording routes take them (one rule: ``parse_time``)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    return parse_time(raw, name)


def event_query(args: Mapping[str, str]) -> EventQuery:
    """The filters of ``GET /api/v1/events``; raises ApiError (400) for a bad parameter."""
    query = EventQuery(camera=text_arg(args, "camera", NAME), label=_label(args),
                       zone=text_arg(args, "zone", NAME), after=_time(args, "after"), before=_time(args, "before"),
                       limit=integer_arg(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT))
    if query.after is not None and query.before is not None and query.after > query.before:
        raise ApiError(400, f"after ({query.after:g}) must be earlier than before ({query.before:g})")
    return query


def checked_event_id(event_id: str) -> str:
    if not valid_event_id(event_id):
        raise ApiError(400, f"an event id must match {EVENT_ID_PATTERN}, got {event_id[:80]!r}")
    return event_id


@dataclass(frozen=True)
class EventViews:
    """What the event views read and the one thing they delete."""

    reads: ApplianceReads
    deletion: EventDeletion


def _unknown(event_id: str) -> ApiError:
    return ApiError(404, f"unknown event {event_id!r}")


def _unusable(err: EventDatabaseUnusable) -> Response:
    return error_response(503, str(err), {"Retry-After": str(RETRY_AFTER_S)})


def list_events(views: EventViews) -> Response:
    query = event_query(request.args)
    return jsonify({"events": [event.to_dict() for event in views.reads.events(query)]})


def get_event(views: EventViews, event_id: str) -> Response:
    event = views.reads.event(checked_event_id(event_id))
    if event is None:
        raise _unknown(event_id)
    return jsonify(event.to_dict())


def snapshot(views: EventViews, event_id: str) -> Response:
    jpeg = views.reads.event_snapshot(checked_event_id(event_id))
    if jpeg is None:
        if views.reads.event(event_id) is None:
            raise _unknown(event_id)
        raise ApiError(404, f"event {event_id!r} has no snapshot")
    response = Response(jpeg, mimetype="image/jpeg")
    response.headers["Content-Disposition"] = f'inline; filename="{event_id}.jpg"'
    return response


def delete_event(views: EventViews, event_id: str) -> Response:
    if not views.deletion.delete_event(checked_event_id(event_id)):
        raise _unknown(event_id)
    return Response(status=204)


def counts(views: EventViews) -> Response:
    return jsonify(views.reads.counts().to_dict())


#: (method, rule, view): the endpoint is ``events.<view name>`` (app.QUERY_TOKEN_ENDPOINTS names one)
ROUTES: Tuple[Tuple[str, str, Callable[..., Response]], ...] = (
    ("GET", "/api/v1/events", list_events),
    ("GET", "/api/v1/events/<event_id>", get_event),
    ("GET", "/api/v1/events/<event_id>/snapshot.jpg", snapshot),
    ("DELETE", "/api/v1/events/<event_id>", delete_event),
    ("GET", "/api/v1/counts", counts),
)


def events_blueprint(reads: ApplianceReads, deletion: EventDeletion) -> Blueprint:
    bp = Blueprint("events", __name__)
    bp.register_error_handler(EventDatabaseUnusable, _unusable)
    views = EventViews(reads, deletion)
    for method, rule, view in ROUTES:
        bp.add_url_rule(rule, view.__name__, partial(view, views), methods=[method])
    return bp
