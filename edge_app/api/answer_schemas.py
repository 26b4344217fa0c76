"""The shared schemas of the OpenAPI document that are no one route's, and what the generated ones
cannot say by themselves.

``Error`` and ``ValidationError`` are what every refusal answers; ``ConfigAnswer`` is the
configuration's schema with the two keys a write adds; the review bodies and the detections
message are built by hand in the layers below (``to_dict``), so their schemas are written here.
:func:`refine` adds to the schemas pydantic generates from the typed reports what their types
cannot say (enums kept as plain strings, descriptions, fixed-length boxes).
"""
from __future__ import annotations

import copy
from typing import Any, Dict

from edge_app.api.routing import ref
from edge_app.config.schema import AppConfig
from edge_app.mqtt.payloads import CAMERA_STATES
from edge_app.review.query import MAX_EVENTS_LISTED, PAGE_SIZE

Schema = Dict[str, Any]
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
_NULLABLE_NUMBER: Schema = {"type": ["number", "null"]}
_BOX: Schema = {"type": "array", "items": NUMBER, "minItems": 4, "maxItems": 4}


def config_schemas() -> Dict[str, Schema]:
    """The configuration (with its parts), the errors, and the answer of a configuration write."""
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
            "details": {"type": "array", "items": {
                "type": "object", "required": ["loc", "msg"],
                "properties": {"loc": {"type": "string", "examples": ["cameras.0.fps_limit"]}, "msg": {"type": "string"}},
            }},
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
    return schemas


def detections_schema() -> Schema:
    detection = {"type": "object", "properties": {
        "class_id": INTEGER, "label": {"type": "string"}, "confidence": NUMBER,
        "bbox": dict(_BOX, description="[x1, y1, x2, y2] in source pixels")}}
    return {
        "type": "object",
        "description": "The latest detections message of a camera, as published on MQTT",
        "properties": {
            "device_id": {"type": "string"}, "camera_id": {"type": "string"}, "frame_id": INTEGER,
            "ts": {"type": "number", "description": "Capture time, Unix seconds"},
            "width": INTEGER, "height": INTEGER, "latency_ms": NUMBER,
            "detections": {"type": "array", "items": detection},
        },
    }


_EVENT_TYPE = {"type": "string", "enum": ["object", "loitering", "occupancy"],
               "description": "loitering: an object inside a zone past its loitering_s; occupancy: more objects "
                              "inside a zone than its max_objects"}


def review_schemas() -> Dict[str, Schema]:
    """The bodies of the review routes (``edge_app.review.query.ReviewPage.to_dict``)."""
    event = {"type": "object", "required": ["id", "type", "label", "start_time", "end_time", "top_score",
                                            "has_snapshot", "has_clip"],
             "properties": {"id": {"type": "string"}, "type": _EVENT_TYPE, "label": {"type": "string"},
                            "start_time": NUMBER, "end_time": _NULLABLE_NUMBER, "top_score": NUMBER,
                            "has_snapshot": {"type": "boolean"}, "has_clip": {"type": "boolean"}}}
    item = {"type": "object", "description": "Events of one camera that overlap or follow within review.gap_s",
            "required": ["id", "camera_id", "severity", "reviewed", "start_time", "end_time", "duration_s", "labels",
                         "zones", "event_count", "events"],
            "properties": {
                "id": {"type": "string", "description": "The id of its first event: stable as the item grows"},
                "camera_id": {"type": "string"}, "severity": {"type": "string", "enum": ["alert", "detection"]},
                "reviewed": {"type": "boolean"},
                "start_time": NUMBER, "end_time": dict(_NULLABLE_NUMBER, description="null while an event is open"),
                "duration_s": _NULLABLE_NUMBER, "labels": {"type": "array", "items": {"type": "string"}},
                "zones": {"type": "array", "items": {"type": "string"}}, "event_count": INTEGER,
                "events": {"type": "array", "items": ref("ReviewEvent"), "maxItems": MAX_EVENTS_LISTED,
                           "description": f"Oldest first, at most {MAX_EVENTS_LISTED}; snapshots and clips by event id "
                                          "(/api/v1/events/{id}/snapshot.jpg, the recording routes)"}}}
    page = {"type": "object", "required": ["items", "total", "page", "pages", "page_size"], "properties": {
        "items": {"type": "array", "items": ref("ReviewItem"), "maxItems": PAGE_SIZE}, "total": INTEGER,
        "page": INTEGER, "pages": INTEGER, "page_size": {"const": PAGE_SIZE}}}
    return {"ReviewEvent": event, "ReviewItem": item, "ReviewPage": page}


def refine(schemas: Dict[str, Schema]) -> None:
    """Say what the types of the generated schemas cannot (only those present are touched)."""
    if "CameraReport" in schemas:
        camera = schemas["CameraReport"]["properties"]
        camera["state"]["enum"] = list(CAMERA_STATES)
        camera["source"]["description"] = "Credentials masked"
        camera["detect"]["description"] = ("Whether its frames go through the model now: cameras[].detect after "
                                           "the profile in force")
    if "ModelReport" in schemas:
        schemas["ModelReport"]["properties"]["input_size"] = {
            "type": ["integer", "array", "null"], "description": "[height, width] once loaded, else the configured side"}
    if "PipelineReport" in schemas:
        schemas["PipelineReport"]["properties"]["stalled"]["description"] = (
            "work waited too long for a completed batch; /readyz answers 503")
    if "ModelStatusReport" in schemas:
        model = schemas["ModelStatusReport"]["properties"]
        model["artifact"]["description"] = ("The fleet artifact and version that run (in a rollout the old one until "
                                            "the new one is loaded); null: a local file runs (path), or none yet")
        model["fallback"]["description"] = "Set while the model names a fleet artifact but runs path (not fetched at start)"
        model["engine_build"]["description"] = "This model's latest TensorRT engine build"
    if "StatusReport" in schemas:
        schemas["StatusReport"]["properties"]["engine_build"]["description"] = (
            "One of models[].engine_build: the build started last among those still building, else the build "
            "started last")
    if "Event" in schemas:
        event = schemas["Event"]
        event["properties"]["box"] = dict(_BOX, description="[x1, y1, x2, y2] in source pixels, latest frame")
        event["properties"]["type"] = _EVENT_TYPE
        event["properties"]["dwell_s"] = dict(event["properties"]["dwell_s"],
                                              description="{zone: seconds the object has spent in it}")
        event["description"] = ("An event: one tracked object of interest, or what a zone's rule noticed (loitering, "
                                "occupancy); times in Unix seconds")
        event["properties"]["occupancy"] = dict(event["properties"]["occupancy"],
                                                description="An occupancy event's objects and limit; null for the others")
        event["required"] = list(event["properties"])
    if "Occupancy" in schemas:
        occupancy = schemas["Occupancy"]
        occupancy["properties"] = {
            "objects": dict(occupancy["properties"]["objects"],
                            description="{label: objects of the zone's labels inside} at this message"),
            "count": dict(INTEGER, description="the sum of objects: inside at this message"),
            "peak_objects": dict(INTEGER, description="the most inside at once since the event began"),
            "max_objects": dict(INTEGER, description="the zone's limit"),
        }
        occupancy["required"] = list(occupancy["properties"])
    if "CountsReport" in schemas:
        counts = schemas["CountsReport"]
        per_label = {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": INTEGER}}
        counts["properties"]["cameras"] = dict(per_label, description="{camera: {label: objects in view now}}")
        counts["properties"]["zones"] = dict(per_label, description="{zone: {label: objects in the zone now}}")
        counts["properties"]["lines"] = {
            "type": "object", "description": "Crossings since the counts were reset, kept across restarts",
            "additionalProperties": {"type": "object", "properties": {"in": INTEGER, "out": INTEGER}}}
        counts["properties"]["zone_stats"]["description"] = (
            "{zone: occupancy now, mean dwell of the visits that ended in the last hour, loitering, occupancy alert}")
        counts["required"] = list(counts["properties"])
        counts["description"] = "Objects in view now, and line crossings kept across restarts"
