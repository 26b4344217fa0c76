"""The OpenAPI entries of the review routes (edge_app/api/review.py), merged into
:func:`edge_app.api.openapi.build_openapi`."""
from __future__ import annotations

from typing import Any, Callable, Dict

from edge_app.api.openapi.parts import INTEGER, NAME_FILTER, NUMBER, TIME, Schema, error, error_with_headers, json_answer, param, ref
from edge_app.api.review import MAX_IDS
from edge_app.config.schema_rules import LABEL_TOPIC_CHARS, MAX_LABEL_CHARS
from edge_app.events.query import EVENT_ID_PATTERN
from edge_app.review.query import MAX_EVENTS_LISTED, MAX_PAGE, PAGE_SIZE

Op = Callable[..., Dict[str, Any]]

_NULLABLE_NUMBER: Schema = {"type": ["number", "null"]}
_ITEM_ID: Schema = {"type": "string", "pattern": f"^{EVENT_ID_PATTERN}$"}
_LABEL: Schema = {"type": "string", "maxLength": MAX_LABEL_CHARS, "pattern": "^[^\\x00-\\x1f\\x7f" + LABEL_TOPIC_CHARS + "]*$"}
_SEVERITY: Schema = {"type": "string", "enum": ["alert", "detection"]}
#: as filters, where empty is the same as none (what an HTML form sends for a field left blank)
_SEVERITY_FILTER: Schema = {"type": "string", "enum": ["", "alert", "detection"]}
_DAY: Schema = {"type": "string", "pattern": "^([0-9]{4}-[0-9]{2}-[0-9]{2})?$"}


#: the filters of both routes: name -> (description, schema)
FILTERS: Dict[str, Any] = {
    "camera": ("Only this camera's items", NAME_FILTER),
    "label": ("Only items with an event of this label", _LABEL),
    "zone": ("Only items with an event that entered this zone", NAME_FILTER),
    "severity": ("alert or detection (review.alerts)", _SEVERITY_FILTER),
    "day": ("Only items starting on this local date (the appliance's time zone)", _DAY),
}


def review_schemas() -> Dict[str, Schema]:
    event = {"type": "object", "required": ["id", "label", "start_time", "end_time", "top_score", "has_snapshot",
                                            "has_clip"],
             "properties": {"id": {"type": "string"}, "label": {"type": "string"}, "start_time": NUMBER,
                            "end_time": _NULLABLE_NUMBER, "top_score": NUMBER, "has_snapshot": {"type": "boolean"},
                            "has_clip": {"type": "boolean"}}}
    item = {"type": "object", "description": "Events of one camera that overlap or follow within review.gap_s",
            "required": ["id", "camera_id", "severity", "reviewed", "start_time", "end_time", "duration_s", "labels",
                         "zones", "event_count", "events"],
            "properties": {
                "id": {"type": "string", "description": "The id of its first event: stable as the item grows"},
                "camera_id": {"type": "string"}, "severity": _SEVERITY, "reviewed": {"type": "boolean"},
                "start_time": NUMBER, "end_time": dict(_NULLABLE_NUMBER, description="null while an event is open"),
                "duration_s": _NULLABLE_NUMBER, "labels": {"type": "array", "items": {"type": "string"}},
                "zones": {"type": "array", "items": {"type": "string"}}, "event_count": INTEGER,
                "events": {"type": "array", "items": ref("ReviewEvent"), "maxItems": MAX_EVENTS_LISTED,
                           "description": f"Oldest first, at most {MAX_EVENTS_LISTED}; snapshots and clips by event id "
                                          "(/api/v1/events/{id}/snapshot.jpg, the recording routes)"}}}
    page = {"type": "object", "required": ["items", "total", "page", "pages", "page_size"], "properties": {
        "items": {"type": "array", "items": ref("ReviewItem"), "maxItems": PAGE_SIZE}, "total": INTEGER,
        "page": INTEGER, "pages": INTEGER, "page_size": {"const": PAGE_SIZE}}}
    mark = {"type": "object", "additionalProperties": False,
            "description": "Either ids, or before with filters (every item of the filters starting at or before it)",
            "properties": {
                "ids": {"type": "array", "items": _ITEM_ID, "minItems": 1, "maxItems": MAX_IDS},
                "before": {"anyOf": [{"type": "number", "minimum": 0}, TIME],
                           "description": "Unix seconds or ISO 8601 (without a zone: UTC)"},
                "reviewed": {"type": "boolean", "default": True, "description": "false marks them not reviewed again"},
                **{name: dict(schema, description=text) for name, (text, schema) in FILTERS.items()}}}
    return {"ReviewEvent": event, "ReviewItem": item, "ReviewPage": page, "ReviewMark": mark,
            "ReviewMarked": {"type": "object", "required": ["changed"],
                             "properties": {"changed": dict(INTEGER, description="Marks added (or removed)")}}}


def review_paths(op: Op) -> Dict[str, Any]:
    """The paths of the review routes; ``op`` is openapi._op."""
    unavailable = error_with_headers("The event database cannot be read or written now",
                                     **{"Retry-After": "Seconds until asking again is worth it"})
    params = [param(name, "query", schema, text) for name, (text, schema) in FILTERS.items()] + [
        param("reviewed", "query", {"type": "integer", "enum": [0, 1]}, "Only items (not) marked reviewed"),
        param("page", "query", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
              f"Pages of {PAGE_SIZE} items, newest first"),
    ]
    body = {"required": True, "content": {"application/json": {"schema": ref("ReviewMark")}}}
    return {
        "/api/v1/review": {"get": op("Review items (a camera's events grouped by activity), newest first",
                                     {"200": json_answer(ref("ReviewPage"), "A page of items and the total"),
                                      "400": error("Bad query parameter"), "503": unavailable}, "review", params)},
        "/api/v1/review/reviewed": {"post": op(
            "Mark review items reviewed (or not): by id, or all of the filters up to a time",
            {"200": json_answer(ref("ReviewMarked"), "Marked"), "400": error("Bad body: unknown keys, a bad id or time"),
             "404": error("The appliance keeps no event database"), "413": error("Body larger than api.max_body_bytes"),
             "415": error("Body is not JSON"), "503": unavailable}, "review", body=body)},
    }
