"""``/api/v1/events`` and ``/api/v1/counts``: stored events, their snapshots, and live counts.

Every query parameter is checked before the store sees it: a wrong number or limit is a 400
with a sentence saying which parameter, never a server error, and an event id must look like
one (it never becomes a path: the store keeps its own file names). A database found corrupt is
a 503 saying so, never an empty list that looks like the truth.
"""
from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from edge_app.http_server.errors import ApiError, error_response
from edge_app.http_server.event_params import checked_event_id, event_query
from edge_app.events.recovery import EventDatabaseUnusable
from edge_app.reporting.protocol import ApplianceService

RETRY_AFTER_S = 5  # a corrupt database is moved aside and a new one started within moments


def events_blueprint(service: ApplianceService) -> Blueprint:
    bp = Blueprint("events", __name__)

    def unknown(event_id: str) -> ApiError:
        return ApiError(404, f"unknown event {event_id!r}")

    @bp.errorhandler(EventDatabaseUnusable)
    def unusable(err: EventDatabaseUnusable) -> Response:
        return error_response(503, str(err), {"Retry-After": str(RETRY_AFTER_S)})

    @bp.get("/api/v1/events")
    def list_events() -> Response:
        query = event_query(request.args)
        return jsonify({"events": [event.to_dict() for event in service.events(query)]})

    @bp.get("/api/v1/events/<event_id>")
    def get_event(event_id: str) -> Response:
        event = service.event(checked_event_id(event_id))
        if event is None:
            raise unknown(event_id)
        return jsonify(event.to_dict())

    @bp.get("/api/v1/events/<event_id>/snapshot.jpg")
    def snapshot(event_id: str) -> Response:
        jpeg = service.event_snapshot(checked_event_id(event_id))
        if jpeg is None:
            if service.event(event_id) is None:
                raise unknown(event_id)
            raise ApiError(404, f"event {event_id!r} has no snapshot")
        response = Response(jpeg, mimetype="image/jpeg")
        response.headers["Content-Disposition"] = f'inline; filename="{event_id}.jpg"'
        return response

    @bp.delete("/api/v1/events/<event_id>")
    def delete_event(event_id: str) -> Response:
        if not service.delete_event(checked_event_id(event_id)):
            raise unknown(event_id)
        return Response(status=204)

    @bp.get("/api/v1/counts")
    def counts() -> Response:
        return jsonify(service.counts().to_dict())

    return bp
