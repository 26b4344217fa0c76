"""``GET /api/openapi.json``: an OpenAPI 3.1 description of every route.

3.1 rather than 3.0 because its schemas are JSON Schema 2020-12, which is what pydantic emits
for the configuration (``null`` as a type, for one), so that schema is used unchanged.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional

from flask import Blueprint, Response, jsonify

from pydantic import TypeAdapter

from edge_app.api.openapi.parts import (INTEGER, NAME, NAME_FILTER, NUMBER, TIME_FILTER, Schema, binary, error,
                                        error_with_headers, json_answer, obj, param, ref)
from edge_app.api.openapi.recordings import recording_paths, recording_schemas
from edge_app.api.openapi.review import review_paths, review_schemas
from edge_app.config.schema import AppConfig
from edge_app.config.schema_rules import LABEL_TOPIC_CHARS, MAX_LABEL_CHARS
from edge_app.events.model import Event
from edge_app.events.query import EVENT_ID_PATTERN, MAX_LIMIT
from edge_app.mqtt.payloads import CAMERA_STATES
from edge_app.reporting.protocol import CountsReport, StatusReport
from edge_app.version import __version__

# What the server answers to any request before a route sees it (edge_app/http_server/http_limits.py).
PROTOCOL_ERRORS = {
    "400": error("Host names a DNS name other than localhost that api.allowed_hosts does not list"),
    "408": error_with_headers("The request line and headers did not arrive within 10 s", Connection="close"),
    "413": error("Declared body (Content-Length) larger than api.max_body_bytes; refused before it is read"),
    "414": error("Request line longer than 32 KiB"),
    "431": error("Request headers larger than 32 KiB in total"),
}
THROTTLED = error_with_headers(
    "Too many wrong tokens from this address (10 a minute); refused until the minute is over",
    **{"Retry-After": "Seconds until this address may try again"},
)


CAMERA_ID = param("camera_id", "path", NAME, required=True)
ANNOTATE = param("annotate", "query", {"type": "integer", "enum": [0, 1]}, "Draw boxes and labels")
QUALITY = param("quality", "query", {"type": "integer", "minimum": 1, "maximum": 100}, "JPEG quality")
FPS = param("fps", "query", {"type": "number", "minimum": 0.1, "maximum": 30}, "Most frames per second sent (default 10)")
EVENT_ID = param("event_id", "path", {"type": "string", "pattern": f"^{EVENT_ID_PATTERN}$"}, required=True)
EVENT_FILTERS = [
    param("camera", "query", NAME_FILTER, "Only this camera's events"),
    # The rule of labels in the configuration, as far as a pattern can say it (not the invisible characters).
    param("label", "query", {"type": "string", "maxLength": MAX_LABEL_CHARS,
                             "pattern": "^[^\\x00-\\x1f\\x7f" + LABEL_TOPIC_CHARS + "]*$"},
          "Only events of this label"),
    param("zone", "query", NAME_FILTER, "Only events that entered this zone"),
    param("after", "query", TIME_FILTER, "Started after this time: Unix seconds or ISO 8601 (without a zone: UTC)"),
    param("before", "query", TIME_FILTER, "Started before this time (as after; not earlier than after)"),
    param("limit", "query", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 50}, "Most events answered"),
]
TOKEN_QUERY = param("token", "query", {"type": "string"}, "The API token, for <img> tags that cannot send headers")
CONFIG_BODY_ERRORS = {
    "400": json_answer({"anyOf": [ref("ValidationError"), ref("Error")]},
                       "Invalid configuration (details locate each problem), or a body that is not JSON; nothing changed"),
    "413": error("Body larger than api.max_body_bytes"),
    "415": error("Body is not JSON"),
}


def _report_schemas() -> Dict[str, Schema]:
    """Status and camera answers, generated from the typed reports the appliance returns."""
    schema = TypeAdapter(StatusReport).json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
    schemas: Dict[str, Schema] = dict(schema.pop("$defs", {}))
    schemas["StatusReport"] = schema
    camera = schemas["CameraReport"]["properties"]
    camera["state"]["enum"] = list(CAMERA_STATES)
    camera["source"]["description"] = "Credentials masked"
    schemas["ModelReport"]["properties"]["input_size"] = {
        "type": ["integer", "array", "null"], "description": "[height, width] once loaded, else the configured side"}
    schemas["PipelineReport"]["properties"]["stalled"]["description"] = (
        "work waited too long for a completed batch; /readyz answers 503")
    model = schemas["ModelStatusReport"]["properties"]
    model["artifact"]["description"] = ("The fleet artifact and version that run (in a rollout the old one until "
                                        "the new one is loaded); null: a local file runs (path), or none yet")
    model["fallback"]["description"] = "Set while the model names a fleet artifact but runs path (not fetched at start)"
    model["engine_build"]["description"] = "This model's latest TensorRT engine build"
    schema["properties"]["engine_build"]["description"] = ("One of models[].engine_build: the build started last among "
                                                           "those still building, else the build started last")
    return schemas


def _event_schemas() -> Dict[str, Schema]:
    """The event object (docs/mqtt.md) and the counts, generated from the dataclasses the store and appliance answer."""
    event = TypeAdapter(Event).json_schema(mode="serialization")
    event["properties"]["box"] = {"type": "array", "items": NUMBER, "minItems": 4, "maxItems": 4,
                                  "description": "[x1, y1, x2, y2] in source pixels, latest frame"}
    event["description"] = "An event: one tracked object of interest (times in Unix seconds)"
    event["required"] = list(event["properties"])
    counts = TypeAdapter(CountsReport).json_schema(mode="serialization")
    per_label = {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": INTEGER}}
    counts["properties"]["cameras"] = dict(per_label, description="{camera: {label: objects in view now}}")
    counts["properties"]["zones"] = dict(per_label, description="{zone: {label: objects in the zone now}}")
    counts["properties"]["lines"] = {"type": "object", "description": "Crossings since the counts were reset, kept across restarts",
                                     "additionalProperties": obj(**{"in": INTEGER, "out": INTEGER})}
    counts["required"] = list(counts["properties"])
    counts["description"] = "Objects in view now, and line crossings kept across restarts"
    return {"Event": event, "EventList": dict(obj(events={"type": "array", "items": ref("Event")}), required=["events"]), "Counts": counts}


def _component_schemas() -> Dict[str, Schema]:
    config_schema = AppConfig.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas: Dict[str, Schema] = dict(config_schema.pop("$defs", {}))
    schemas["AppConfig"] = config_schema
    schemas["Error"] = {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string", "description": "One sentence saying what went wrong"}},
    }
    schemas["ValidationError"] = {
        "type": "object",
        "required": ["error", "details"],
        "properties": {
            "error": {"type": "string"},
            "details": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["loc", "msg"],
                    "properties": {"loc": {"type": "string", "examples": ["cameras.0.fps_limit"]}, "msg": {"type": "string"}},
                },
            },
        },
    }
    # AppConfig forbids unknown keys, so an allOf with it would refuse the two added ones: the
    # answer is a copy of the configuration's schema with them added.
    answer = copy.deepcopy(config_schema)
    answer["properties"].update({
        "restart_required": {"type": "array", "items": {"type": "string"}, "examples": [["api.port"]]},
        "applying": {"type": "array", "items": {"type": "string"}, "examples": [["model"]],
                     "description": "Saved, still being applied in the background: a new model loads "
                                    "(on a Jetson its engine builds) while the old one keeps running; "
                                    "status.model_change and status.engine_build show the progress"},
    })
    answer["title"] = "ConfigAnswer"
    answer["description"] = ("The configuration now saved (secrets shown as \"***\"), the settings that need a restart "
                             "and the parts still being applied")
    schemas["ConfigAnswer"] = answer
    schemas.update(_report_schemas())
    schemas.update(_event_schemas())
    schemas.update(recording_schemas())
    schemas.update(review_schemas())
    schemas["DetectionsMessage"] = {
        "type": "object",
        "description": "The latest detections message of a camera, as published on MQTT",
        "properties": {
            "device_id": {"type": "string"},
            "camera_id": {"type": "string"},
            "frame_id": {"type": "integer"},
            "ts": {"type": "number", "description": "Capture time, Unix seconds"},
            "width": {"type": "integer"},
            "height": {"type": "integer"},
            "latency_ms": {"type": "number"},
            "detections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "class_id": {"type": "integer"},
                        "label": {"type": "string"},
                        "confidence": {"type": "number"},
                        "bbox": {
                            "type": "array",
                            "items": NUMBER,
                            "minItems": 4,
                            "maxItems": 4,
                            "description": "[x1, y1, x2, y2] in source pixels",
                        },
                    },
                },
            },
        },
    }
    return schemas


def _op(
    summary: str,
    responses: Dict[str, Any],
    tag: str,
    params: Optional[List[Dict[str, Any]]] = None,
    body: Optional[Dict[str, Any]] = None,
    secured: bool = True,
) -> Dict[str, Any]:
    op: Dict[str, Any] = {"summary": summary, "tags": [tag], "responses": dict(responses)}
    if params:
        op["parameters"] = params
    if body:
        op["requestBody"] = body
    for status, answer in PROTOCOL_ERRORS.items():
        op["responses"].setdefault(status, answer)
    if secured:
        op["responses"].setdefault("401", error("Missing or wrong token (when api.token is set)"))
        op["responses"].setdefault("429", THROTTLED)
    else:
        op["security"] = []
    return op


def _paths() -> Dict[str, Any]:
    string_list = {"type": "array", "items": {"type": "string"}}
    unknown_camera = error("Unknown camera")
    bad_query = error("Bad query parameter")
    config_body = {"required": True, "content": {"application/json": {"schema": ref("AppConfig")}}}
    patch_body = {
        "required": True,
        "content": {"application/merge-patch+json": {"schema": {"type": "object"}}, "application/json": {"schema": {"type": "object"}}},
        "description": "RFC 7396 JSON merge patch; null deletes a key (back to its default). models may be an object "
                       "instead of a list: each key (a model's name, or artifact:<fleet model name>) addresses one "
                       "model, its value a merge patch of that model (configuration.md, Several models)",
    }
    config_answer = {"200": json_answer(ref("ConfigAnswer"), "Applied and saved"), **CONFIG_BODY_ERRORS}
    camera_body = {"required": True, "description": "One camera, as in the configuration's camera list",
                   "content": {"application/json": {"schema": ref("CameraConfig")}}}
    camera_patch_body = {
        "required": True,
        "content": {"application/merge-patch+json": {"schema": {"type": "object"}}, "application/json": {"schema": {"type": "object"}}},
        "description": "RFC 7396 JSON merge patch of this one camera; null deletes a key (back to its default). "
                       "A source whose host changes must carry its credentials again (\"***\" is refused there)",
    }
    camera_edit_errors = {
        **CONFIG_BODY_ERRORS,
        "400": json_answer({"anyOf": [ref("ValidationError"), ref("Error")]},
                           "Refused; details locate each problem in the whole configuration (cameras.2.fps_limit), "
                           "or the body is not JSON; nothing changed"),
    }
    conflict = error("A camera with this id already exists; nothing changed")
    camera_answer = json_answer(ref("CameraConfig"), "The camera as now saved (credentials in its source masked)")
    unknown_event = error("Unknown event")
    bad_id = error("Not an event id")
    corrupt_events = error_with_headers(
        "The event database was found corrupt: it is moved aside and a new one started (events.database in the "
        "status says where, or why it cannot be)", **{"Retry-After": "Seconds until asking again is worth it"})
    ready = json_answer({"type": "object", "properties": {"ready": {"const": True}}}, "Ready")
    not_ready = json_answer(
        {"type": "object", "properties": {"ready": {"const": False}, "reasons": string_list, "error": {"type": "string"}}},
        "Not ready",
    )
    text = {"description": "Prometheus text exposition", "content": {"text/plain": {"schema": {"type": "string"}}}}
    html = {"description": "HTML page", "content": {"text/html": {"schema": {"type": "string"}}}}
    return {
        "/healthz": {"get": _op("Liveness", {"200": json_answer({"type": "object", "properties": {"status": {"const": "ok"}}}, "Alive")}, "health", secured=False)},
        "/readyz": {"get": _op("Readiness: model loaded and a camera streams", {"200": ready, "503": not_ready}, "health", secured=False)},
        "/metrics": {"get": _op("Prometheus metrics; the token is needed as api.metrics_auth says (by default while the "
                                "API listens beyond loopback)", {"200": text}, "monitoring")},
        "/api/openapi.json": {"get": _op("This document", {"200": json_answer({"type": "object"}, "OpenAPI document")}, "meta", secured=False)},
        "/": {"get": _op("Built-in dashboard", {"200": html}, "meta", secured=False)},
        "/api/v1/status": {"get": _op("Device, model, MQTT, cameras, pipeline and device health figures", {"200": json_answer(ref("StatusReport"), "Status")}, "status")},
        "/api/v1/health/device": {"get": _op("Device health: temperatures, throttling, power, GPU, memory, disk and problems "
                                             "(as R/health); a figure that is unavailable is a string saying why",
                                             {"200": json_answer(ref("HealthReport"), "The latest sample")}, "status")},
        "/api/v1/config": {
            "get": _op("The running configuration (secrets shown as \"***\")", {"200": json_answer(ref("AppConfig"), "Configuration")}, "config"),
            "put": _op("Replace the configuration; applied live and saved", config_answer, "config", body=config_body),
            "patch": _op("Merge-patch the configuration; applied live and saved", config_answer, "config", body=patch_body),
        },
        "/api/v1/cameras": {
            "get": _op("All cameras", {"200": json_answer({"type": "array", "items": ref("CameraReport")}, "Cameras")}, "cameras"),
            "post": _op("Add a camera; applied live and saved, with the rules of PUT /api/v1/config",
                        {"201": dict(camera_answer, headers={"Location": {"description": "The new camera's path",
                                                                          "schema": {"type": "string"}}}),
                         "409": conflict, **camera_edit_errors}, "cameras", body=camera_body),
        },
        "/api/v1/cameras/{camera_id}": {
            "get": _op("One camera", {"200": json_answer(ref("CameraReport"), "Camera"), "404": unknown_camera}, "cameras", [CAMERA_ID]),
            "patch": _op("Merge-patch one camera; applied live and saved, with the rules of PUT /api/v1/config",
                         {"200": camera_answer, "404": unknown_camera, "409": error("Renamed to the id of another camera"),
                          **camera_edit_errors}, "cameras", [CAMERA_ID], body=camera_patch_body),
            "delete": _op("Remove one camera; applied live and saved", {"204": {"description": "Removed"},
                                                                        "400": json_answer(ref("ValidationError"), "Refused; nothing changed"),
                                                                        "404": unknown_camera}, "cameras", [CAMERA_ID]),
        },
        "/api/v1/cameras/{camera_id}/snapshot.jpg": {
            "get": _op(
                "The latest analysed frame",
                {"200": binary("image/jpeg", "JPEG image"), "400": bad_query, "404": unknown_camera, "503": error("No analysed frame yet")},
                "cameras",
                [CAMERA_ID, ANNOTATE, QUALITY, TOKEN_QUERY],
            ),
        },
        "/api/v1/cameras/{camera_id}/detections": {
            "get": _op(
                "The latest detections message",
                {"200": json_answer(ref("DetectionsMessage"), "Detections"), "404": unknown_camera, "503": error("No detections yet")},
                "cameras",
                [CAMERA_ID],
            ),
        },
        "/api/v1/cameras/{camera_id}/stream.mjpg": {
            "get": _op(
                "Annotated live view",
                {
                    "200": binary("multipart/x-mixed-replace", "A stream of JPEG parts"),
                    "400": bad_query,
                    "404": unknown_camera,
                    "503": error("Too many live views are open, in total or of this camera"),
                },
                "cameras",
                [CAMERA_ID, ANNOTATE, QUALITY, FPS, TOKEN_QUERY],
            ),
        },
        "/api/v1/events": {
            "get": _op("Stored events, newest first", {"200": json_answer(ref("EventList"), "Events"), "400": bad_query,
                                                       "503": corrupt_events},
                       "events", EVENT_FILTERS),
        },
        "/api/v1/events/{event_id}": {
            "get": _op("One event", {"200": json_answer(ref("Event"), "Event"), "400": bad_id, "404": unknown_event,
                                     "503": corrupt_events},
                       "events", [EVENT_ID]),
            "delete": _op("Delete an event and its snapshot", {"204": {"description": "Deleted"}, "400": bad_id,
                                                               "404": unknown_event}, "events", [EVENT_ID]),
        },
        "/api/v1/events/{event_id}/snapshot.jpg": {
            "get": _op("The event's best snapshot, annotated with its box",
                       {"200": binary("image/jpeg", "JPEG image"), "400": bad_id,
                        "404": error("Unknown event, or it has no snapshot"), "503": corrupt_events},
                       "events", [EVENT_ID, TOKEN_QUERY]),
        },
        "/api/v1/counts": {
            "get": _op("Objects in view per camera and zone, and line crossings", {"200": json_answer(ref("Counts"), "Counts")},
                       "events"),
        },
        **recording_paths(_op, EVENT_ID),
        **review_paths(_op),
    }


def build_openapi() -> Dict[str, Any]:
    """The OpenAPI document; every path here is a route of the app and vice versa (a test compares
    them method by method, so a route added to a blueprint needs its entry in ``_paths``)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "edge-app REST API",
            "version": __version__,
            "description": "Status, configuration, snapshots, detections and live views of an edge-app appliance. "
            "Every error is a JSON object {\"error\": \"<sentence>\"}. A camera with no frame yet streams "
            "a \"no frame yet\" picture until it has one; every live view sends a part at least every 2 s.",
        },
        "paths": _paths(),
        "components": {
            "schemas": _component_schemas(),
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer", "description": "api.token, when set"}},
        },
        "security": [{"bearerAuth": []}],
    }


def openapi_blueprint() -> Blueprint:
    bp = Blueprint("openapi", __name__)
    document = build_openapi()  # static: built once per app

    @bp.get("/api/openapi.json")
    def openapi() -> Response:
        return jsonify(document)

    return bp
