"""Typed requests of the API: the query parameters and JSON bodies the routes take.

Each query model lists a route's parameters with the JSON Schema the OpenAPI document gives them
(``WithJsonSchema``: the exact rule the route checks, as far as a pattern can say it); the
routes check the values with :mod:`edge_app.http_server.query_params`, whose sentences name the
parameter. Every model forbids keys it does not name.
"""
from __future__ import annotations

from typing import Annotated, Any, Dict, List, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from edge_app.api.recording_params import MAX_EXPORT_S
from edge_app.api.routing import tidy_schema
from edge_app.config.schema_rules import LABEL_TOPIC_CHARS, MAX_LABEL_CHARS
from edge_app.events.query import EVENT_ID_PATTERN, MAX_LIMIT
from edge_app.http_server.query_params import TIME_PATTERN
from edge_app.http_server.signed_urls import DEFAULT_TTL_S, MAX_TTL_S, MIN_TTL_S, SIG_HEX_CHARS
from edge_app.record.types import MAX_PART
from edge_app.review.query import MAX_PAGE, PAGE_SIZE

Schema = Dict[str, Any]

#: a camera (or zone) id, and the same as a query filter, where empty is the same as none (what an
#: HTML form sends for a field left blank)
NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}
NAME_FILTER: Schema = {"type": "string", "pattern": "^[A-Za-z0-9_-]{0,64}$"}
#: a time as the routes take it (``http_server.query_params.parse_time``), and the same as a filter
TIME: Schema = {"type": "string", "pattern": TIME_PATTERN}
TIME_FILTER: Schema = {"type": "string", "pattern": TIME_PATTERN.replace("^(", "^(|")}
#: the rule of labels in the configuration, as far as a pattern can say it (not the invisible characters)
LABEL: Schema = {"type": "string", "maxLength": MAX_LABEL_CHARS, "pattern": "^[^\\x00-\\x1f\\x7f" + LABEL_TOPIC_CHARS + "]*$"}
FLAG: Schema = {"type": "integer", "enum": [0, 1]}
ITEM_ID: Schema = {"type": "string", "pattern": f"^{EVENT_ID_PATTERN}$"}
SEVERITY_FILTER: Schema = {"type": "string", "enum": ["", "alert", "detection"]}
DAY: Schema = {"type": "string", "pattern": "^([0-9]{4}-[0-9]{2}-[0-9]{2})?$"}
#: item ids one request may mark; "all up to here" (``before``) has no such limit
MAX_IDS = 1000


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, json_schema_extra=tidy_schema)


Text = Optional[str]


class SnapshotQuery(_Query):
    annotate: Annotated[Optional[int], WithJsonSchema(FLAG), Field(description="Draw boxes and labels")] = None
    quality: Annotated[Optional[int], WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 100}),
                       Field(description="JPEG quality")] = None
    token: Annotated[Text, WithJsonSchema({"type": "string"}),
                     Field(description="The API token, for <img> tags that cannot send headers")] = None


class StreamQuery(_Query):
    annotate: Annotated[Optional[int], WithJsonSchema(FLAG), Field(description="Draw boxes and labels")] = None
    quality: Annotated[Optional[int], WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 100}),
                       Field(description="JPEG quality")] = None
    fps: Annotated[Optional[float], WithJsonSchema({"type": "number", "minimum": 0.1, "maximum": 30}),
                   Field(description="Most frames per second sent (default 10)")] = None
    token: Annotated[Text, WithJsonSchema({"type": "string"}),
                     Field(description="The API token, for <img> tags that cannot send headers")] = None


class EventFilters(_Query):
    camera: Annotated[Text, WithJsonSchema(NAME_FILTER), Field(description="Only this camera's events")] = None
    label: Annotated[Text, WithJsonSchema(LABEL), Field(description="Only events of this label")] = None
    zone: Annotated[Text, WithJsonSchema(NAME_FILTER), Field(description="Only events that entered this zone")] = None
    after: Annotated[Text, WithJsonSchema(TIME_FILTER), Field(
        description="Started after this time: Unix seconds or ISO 8601 (without a zone: UTC)")] = None
    before: Annotated[Text, WithJsonSchema(TIME_FILTER), Field(
        description="Started before this time (as after; not earlier than after)")] = None
    limit: Annotated[int, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 50}),
                     Field(description="Most events answered")] = 50


class EventSnapshotQuery(_Query):
    token: Annotated[Text, WithJsonSchema({"type": "string"}),
                     Field(description="The API token, for <img> tags that cannot send headers")] = None


_PART = Annotated[int, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_PART}), Field(
    description="Which part of a clip longer than record.events.max_s (default 0: the one from the event's start)")]
_DOWNLOAD = Annotated[Text, WithJsonSchema({"type": "string", "enum": ["", "0", "1"]}),
                      Field(description="1: answer with Content-Disposition: attachment (a download button)")]
_EXPIRES = Annotated[Optional[int], WithJsonSchema({"type": "integer", "minimum": 0}),
                     Field(description="Of a signed URL: Unix seconds it is valid until")]
_SIG = Annotated[Text, WithJsonSchema({"type": "string", "pattern": f"^[0-9a-f]{{{SIG_HEX_CHARS}}}$"}),
                 Field(description="Of a signed URL: HMAC-SHA256 of the path and the other parameters")]


class ClipQuery(_Query):
    part: _PART = 0
    download: _DOWNLOAD = None
    expires: _EXPIRES = None
    sig: _SIG = None


class ClipUrlQuery(_Query):
    part: _PART = 0


class SegmentsQuery(_Query):
    camera: Annotated[Text, WithJsonSchema(NAME_FILTER), Field(description="Only this camera's segments")] = None
    from_: Annotated[Text, WithJsonSchema(TIME_FILTER), Field(
        alias="from", description="Start: Unix seconds or ISO 8601 (without a zone: UTC); default a day before to")] = None
    to: Annotated[Text, WithJsonSchema(TIME_FILTER), Field(description="End, after from; default now")] = None


class ExportUrlQuery(_Query):
    camera: Annotated[str, WithJsonSchema(NAME), Field(description="The camera")]
    from_: Annotated[str, WithJsonSchema(TIME), Field(
        alias="from", description="Start: Unix seconds or ISO 8601 (without a zone: UTC)")]
    to: Annotated[str, WithJsonSchema(TIME), Field(description=f"End, after from and at most {MAX_EXPORT_S:g} s later")]


class ExportQuery(ExportUrlQuery):
    download: _DOWNLOAD = None
    expires: _EXPIRES = None
    sig: _SIG = None


class ReviewFilters(_Query):
    """The filters of both review routes (the GET also ``reviewed`` and ``page``)."""

    camera: Annotated[Text, WithJsonSchema(NAME_FILTER), Field(description="Only this camera's items")] = None
    label: Annotated[Text, WithJsonSchema(LABEL), Field(description="Only items with an event of this label")] = None
    zone: Annotated[Text, WithJsonSchema(NAME_FILTER),
                    Field(description="Only items with an event that entered this zone")] = None
    severity: Annotated[Text, WithJsonSchema(SEVERITY_FILTER),
                        Field(description="alert or detection (review.alerts)")] = None
    day: Annotated[Text, WithJsonSchema(DAY), Field(
        description="Only items starting on this local date (the appliance's time zone)")] = None


class ReviewListQuery(ReviewFilters):
    reviewed: Annotated[Optional[int], WithJsonSchema(FLAG), Field(description="Only items (not) marked reviewed")] = None
    page: Annotated[int, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1}),
                    Field(description=f"Pages of {PAGE_SIZE} items, newest first")] = 1


class TtlBody(BaseModel):
    """The optional body of the routes that sign a URL."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=tidy_schema)
    ttl_s: int = Field(DEFAULT_TTL_S, ge=MIN_TTL_S, le=MAX_TTL_S, strict=True)


class ReviewMark(ReviewFilters):
    """Either ids, or before with filters (every item of the filters starting at or before it)."""

    ids: Annotated[Optional[List[str]], WithJsonSchema(
        {"type": "array", "items": ITEM_ID, "minItems": 1, "maxItems": MAX_IDS})] = None
    before: Annotated[Optional[Union[float, str]], WithJsonSchema(
        {"anyOf": [{"type": "number", "minimum": 0}, TIME]}),
        Field(description="Unix seconds or ISO 8601 (without a zone: UTC)")] = None
    reviewed: bool = Field(True, description="false marks them not reviewed again")
