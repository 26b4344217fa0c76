"""``/api/v1/events`` and ``/api/v1/counts``: stored events, their snapshots, and live counts.

Every query parameter is checked before the store sees it: a wrong number or limit is a 400
with a sentence saying which parameter, never a server error, and an event id must look like
one (it never becomes a path: the store keeps its own file names). A database found corrupt is
a 503 saying so, never an empty list that looks like the truth.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from flask import Blueprint, Response, jsonify

from edge_app.api.answers import EventList, EventTrackAnswer
from edge_app.api.request_models import EventFilters, EventSnapshotQuery
from edge_app.api.routing import ResponseSpec, Route, binary, error, register_routes
from edge_app.events.model import Event
from edge_app.events.query import EventQuery
from edge_app.events.recovery import EventDatabaseUnusable
from edge_app.events.tracks import EventTrack
from edge_app.http_server.errors import ApiError, error_response
from edge_app.http_server.event_params import checked_event_id, checked_event_query
from edge_app.reporting.protocol import ApplianceReads, CountsReport, EventDeletion

RETRY_AFTER_S = 5  # a corrupt database is moved aside and a new one started within moments


@dataclass(frozen=True)
class EventViews:
    """What the event views read and the one thing they delete."""

    reads: ApplianceReads
    deletion: EventDeletion


def _unknown(event_id: str) -> ApiError:
    return ApiError(404, f"unknown event {event_id!r}")


def _unusable(err: EventDatabaseUnusable) -> Response:
    return error_response(503, str(err), {"Retry-After": str(RETRY_AFTER_S)})


def list_events(views: EventViews, filters: EventFilters) -> Response:
    query = checked_event_query(EventQuery(camera=filters.camera, label=filters.label, zone=filters.zone,
                                           after=filters.after, before=filters.before, limit=filters.limit,
                                           offset=filters.offset, has_clip=filters.has_clip))
    return jsonify({"events": [event.to_dict() for event in views.reads.events(query)],
                    "total": views.reads.event_total(query)})


def get_event(views: EventViews, event_id: str) -> Response:
    event = views.reads.event(checked_event_id(event_id))
    if event is None:
        raise _unknown(event_id)
    return jsonify(event.to_dict())


def snapshot(views: EventViews, _query: EventSnapshotQuery, event_id: str) -> Response:
    jpeg = views.reads.event_snapshot(checked_event_id(event_id))
    if jpeg is None:
        if views.reads.event(event_id) is None:
            raise _unknown(event_id)
        raise ApiError(404, f"event {event_id!r} has no snapshot")
    response = Response(jpeg, mimetype="image/jpeg")
    response.headers["Content-Disposition"] = f'inline; filename="{event_id}.jpg"'
    return response


def track(views: EventViews, event_id: str) -> Response:
    found = views.reads.event_track(checked_event_id(event_id))
    if found is None:
        known = views.reads.event(event_id)
        if known is None:
            raise _unknown(event_id)
        # Still open (the track is written with its end), or ended before tracks were kept.
        found = EventTrack(known.id, known.start_time, ())
    recordings = views.reads.recordings()
    parts = sorted(getattr(recordings, "clips", lambda _id: [])(event_id), key=lambda clip: clip.part)
    return jsonify(EventTrackAnswer(clip_starts=[clip.start for clip in parts], **found.to_dict()).model_dump())


def delete_event(views: EventViews, event_id: str) -> Response:
    if not views.deletion.delete_event(checked_event_id(event_id)):
        raise _unknown(event_id)
    return Response(status=204)


def counts(views: EventViews) -> Response:
    return jsonify(views.reads.counts().to_dict())


_UNKNOWN = error("Unknown event")
_BAD_ID = error("Not an event id")
_CORRUPT = error("The event database was found corrupt: it is moved aside and a new one started (events.database in "
                 "the status says where, or why it cannot be)", **{"Retry-After": "Seconds until asking again is worth it"})

#: the endpoint is ``events.<view name>`` (app.QUERY_TOKEN_ENDPOINTS names one)
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/events", list_events, "Stored events, newest first", "events",
          {200: ResponseSpec("Events", EventList), 400: error("Bad query parameter"), 503: _CORRUPT}, query=EventFilters),
    Route("GET", "/api/v1/events/<event_id>", get_event, "One event", "events",
          {200: ResponseSpec("Event", Event), 400: _BAD_ID, 404: _UNKNOWN, 503: _CORRUPT}),
    Route("DELETE", "/api/v1/events/<event_id>", delete_event, "Delete an event and its snapshot", "events",
          {204: ResponseSpec("Deleted"), 400: _BAD_ID, 404: _UNKNOWN}),
    Route("GET", "/api/v1/events/<event_id>/snapshot.jpg", snapshot, "The event's best snapshot, annotated with its box",
          "events", {200: binary("image/jpeg", "JPEG image"), 400: _BAD_ID,
                     404: error("Unknown event, or it has no snapshot"), 503: _CORRUPT}, query=EventSnapshotQuery),
    Route("GET", "/api/v1/events/<event_id>/track", track, "The event's boxes over time, kept when it ended, and "
          "where its clip's parts start: for drawing them over the clip", "events",
          {200: ResponseSpec("The track", EventTrackAnswer), 400: _BAD_ID,
           404: _UNKNOWN, 503: _CORRUPT}),
    Route("GET", "/api/v1/counts", counts, "Objects in view per camera and zone, and line crossings", "events",
          {200: ResponseSpec("Counts", CountsReport)}),
)


def events_blueprint(reads: ApplianceReads, deletion: EventDeletion) -> Blueprint:
    bp = Blueprint("events", __name__)
    bp.register_error_handler(EventDatabaseUnusable, _unusable)
    views = EventViews(reads, deletion)
    return register_routes(bp, ROUTES, views)
