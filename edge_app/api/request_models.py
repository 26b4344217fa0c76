"""Typed requests of the API: the query parameters and JSON bodies the routes take.

Each query model lists a route's parameters with the JSON Schema the OpenAPI document gives them
(``WithJsonSchema``: the rule the route checks, as far as a pattern can say it) and checks them
itself: every field runs the one rule of its kind (:mod:`edge_app.http_server.query_params`,
:mod:`edge_app.http_server.event_params`, :mod:`edge_app.api.review_params`), whose sentences name
the parameter, and :func:`edge_app.api.routing.parse_query` answers a broken rule with a 400 of
that sentence. A query model ignores parameters it does not name, as the routes always did
(``token`` on the routes an ``<img>`` tag loads, a cache-buster); a body model forbids keys it
does not name.
"""
from __future__ import annotations

import math
from datetime import date
from typing import Annotated, Any, Callable, Dict, List, Optional

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, WithJsonSchema,
                      model_validator)

from edge_app.api.live_view import MAX_STREAM_FPS, MIN_STREAM_FPS
from edge_app.api.recording_params import CAMERA_REQUIRED, MAX_EXPORT_S, RANGE_REQUIRED
from edge_app.api.review_params import checked_day, checked_severity
from edge_app.api.routing import tidy_schema
from edge_app.config.schema_rules import LABEL_TOPIC_CHARS, MAX_LABEL_CHARS
from edge_app.events.query import EVENT_ID_PATTERN, MAX_LIMIT, MAX_OFFSET, valid_event_id
from edge_app.http_server.errors import ApiError
from edge_app.http_server.event_params import checked_label
from edge_app.http_server.query_params import (LARGEST_TIME_S, NAME as NAME_RULE, TIME_PATTERN, flag_arg,
                                               integer_arg, number_arg, parse_time, text_arg)
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

#: a rule of one parameter: its text and its name to the checked value; ApiError (400) otherwise
Rule = Callable[[str, str], Any]


def _checked_by(rule: Rule) -> BeforeValidator:
    """A field checked by ``rule``, which is given the parameter's name (a field named after a Python
    keyword, ``from_``, is the parameter ``from``). Its ApiError becomes the ValueError pydantic
    reports, with the rule's sentence unchanged."""
    def validate(raw: Any, info: ValidationInfo) -> Any:
        name = (info.field_name or "").removesuffix("_")
        if raw is None:  # a body's filter sent as null: no filter, as one left out
            return None
        if not isinstance(raw, str):  # a query parameter always is; a body's filter may not be
            raise ValueError(f"{name} must be a string, got {type(raw).__name__}")
        try:
            return rule(raw, name)
        except ApiError as err:
            raise ValueError(err.message) from None
    return BeforeValidator(validate)


def _integer(low: int, high: int) -> BeforeValidator:
    return _checked_by(lambda raw, name: integer_arg({name: raw}, name, low, low, high))


def _number(low: float, high: float) -> BeforeValidator:
    return _checked_by(lambda raw, name: number_arg({name: raw}, name, low, low, high))


_FLAG = _checked_by(lambda raw, name: flag_arg({name: raw}, name, False))
_NAME = _checked_by(lambda raw, name: text_arg({name: raw}, name, NAME_RULE))
_TIME = _checked_by(lambda raw, name: parse_time(raw, name) if raw else None)
_LABEL = _checked_by(lambda raw, _name: checked_label(raw))
_SEVERITY = _checked_by(lambda raw, _name: checked_severity(raw))
_DAY = _checked_by(lambda raw, _name: checked_day(raw))

Text = Optional[str]
#: 0 or 1, None when left out (the route's default)
Flag = Annotated[Optional[bool], _FLAG, WithJsonSchema(FLAG)]
#: a camera id or zone name; None when left out
NameFilter = Annotated[Optional[str], _NAME, WithJsonSchema(NAME_FILTER)]
#: Unix seconds, from Unix seconds or ISO 8601; None when left out
TimeFilter = Annotated[Optional[float], _TIME, WithJsonSchema(TIME_FILTER)]
Label = Annotated[Optional[str], _LABEL, WithJsonSchema(LABEL)]
#: checked by the signed-URL check before any view (edge_app.http_server.auth), and only when a token is set
_UNCHECKED = Text
_TOKEN = Annotated[Text, WithJsonSchema({"type": "string"}),
                   Field(description="The API token, for <img> tags that cannot send headers")]
_QUALITY = Annotated[Optional[int], _integer(1, 100),
                     WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 100}),
                     Field(description="JPEG quality")]


class _Query(BaseModel):
    """Query parameters: those it does not name are ignored (see the module's docstring)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True, json_schema_extra=tidy_schema)


class SnapshotQuery(_Query):
    annotate: Annotated[Flag, Field(description="Draw boxes and labels")] = None
    quality: _QUALITY = None
    token: _TOKEN = None


class StreamQuery(_Query):
    annotate: Annotated[Flag, Field(description="Draw boxes and labels")] = None
    quality: _QUALITY = None
    fps: Annotated[Optional[float], _number(MIN_STREAM_FPS, MAX_STREAM_FPS),
                   WithJsonSchema({"type": "number", "minimum": MIN_STREAM_FPS, "maximum": MAX_STREAM_FPS}),
                   Field(description="Most frames per second sent (default 10)")] = None
    token: _TOKEN = None


class EventFilters(_Query):
    camera: Annotated[NameFilter, Field(description="Only this camera's events")] = None
    label: Annotated[Label, Field(description="Only events of this label")] = None
    zone: Annotated[NameFilter, Field(description="Only events that entered this zone")] = None
    after: Annotated[TimeFilter, Field(
        description="Started after this time: Unix seconds or ISO 8601 (without a zone: UTC)")] = None
    before: Annotated[TimeFilter, Field(
        description="Started before this time (as after; not earlier than after)")] = None
    limit: Annotated[int, _integer(1, MAX_LIMIT),
                     WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 50}),
                     Field(description="Most events answered")] = 50
    offset: Annotated[int, _integer(0, MAX_OFFSET),
                      WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0}),
                      Field(description="Events skipped first (newest first): the next page starts at offset + "
                                        "limit; total in the answer says how many match")] = 0
    has_clip: Annotated[Flag, Field(description="1: only events with a clip; 0: only those without")] = None


class EventSnapshotQuery(_Query):
    token: _TOKEN = None


_PART = Annotated[int, _integer(0, MAX_PART), WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_PART}),
                  Field(description="Which part of a clip longer than record.events.max_s (default 0: the one from "
                                    "the event's start)")]
_DOWNLOAD = Annotated[Optional[bool], _FLAG, WithJsonSchema({"type": "string", "enum": ["", "0", "1"]}),
                      Field(description="1: answer with Content-Disposition: attachment (a download button)")]
_EXPIRES = Annotated[_UNCHECKED, WithJsonSchema({"type": "integer", "minimum": 0}),
                     Field(description="Of a signed URL: Unix seconds it is valid until")]
_SIG = Annotated[_UNCHECKED, WithJsonSchema({"type": "string", "pattern": f"^[0-9a-f]{{{SIG_HEX_CHARS}}}$"}),
                 Field(description="Of a signed URL: HMAC-SHA256 of the path and the other parameters")]


class ClipQuery(_Query):
    part: _PART = 0
    download: _DOWNLOAD = None
    expires: _EXPIRES = None
    sig: _SIG = None


class LinkClipQuery(_Query):
    """A notification's clip link: the signature alone opens it (checked by the route, 403 saying why)."""

    expires: _EXPIRES = None
    sig: _SIG = None


class ClipUrlQuery(_Query):
    part: _PART = 0


class SegmentsQuery(_Query):
    camera: Annotated[NameFilter, Field(description="Only this camera's segments")] = None
    from_: Annotated[TimeFilter, Field(
        alias="from", description="Start: Unix seconds or ISO 8601 (without a zone: UTC); default a day before to")] = None
    to: Annotated[TimeFilter, Field(description="End, after from; default now")] = None


class ExportUrlQuery(_Query):
    """An export's camera and range, all required (empty is left out: :func:`parse_query`)."""

    camera: Annotated[str, _NAME, WithJsonSchema(NAME), Field(description="The camera")]
    from_: Annotated[float, _TIME, WithJsonSchema(TIME), Field(
        alias="from", description="Start: Unix seconds or ISO 8601 (without a zone: UTC)")]
    to: Annotated[float, _TIME, WithJsonSchema(TIME),
                  Field(description=f"End, after from and at most {MAX_EXPORT_S:g} s later")]

    @model_validator(mode="before")
    @classmethod
    def _required(cls, given: Any) -> Any:
        """Left out (or empty): the sentence saying what the route needs, not pydantic's."""
        if isinstance(given, dict):
            if not given.get("camera"):
                raise ValueError(CAMERA_REQUIRED)
            if not given.get("from") or not given.get("to"):
                raise ValueError(RANGE_REQUIRED)
        return given


class ExportQuery(ExportUrlQuery):
    download: _DOWNLOAD = None
    expires: _EXPIRES = None
    sig: _SIG = None


class ReviewFilters(_Query):
    """The filters of both review routes (the GET also ``reviewed`` and ``page``)."""

    camera: Annotated[NameFilter, Field(description="Only this camera's items")] = None
    label: Annotated[Label, Field(description="Only items with an event of this label")] = None
    zone: Annotated[NameFilter, Field(description="Only items with an event that entered this zone")] = None
    severity: Annotated[Optional[str], _SEVERITY, WithJsonSchema(SEVERITY_FILTER),
                        Field(description="alert or detection (review.alerts)")] = None
    day: Annotated[Optional[date], _DAY, WithJsonSchema(DAY), Field(
        description="Only items starting on this local date (the appliance's time zone)")] = None


class ReviewListQuery(ReviewFilters):
    reviewed: Annotated[Flag, Field(description="Only items (not) marked reviewed")] = None
    page: Annotated[int, _integer(1, MAX_PAGE),
                    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1}),
                    Field(description=f"Pages of {PAGE_SIZE} items, newest first")] = 1


class TtlBody(BaseModel):
    """The optional body of the routes that sign a URL."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=tidy_schema)
    ttl_s: int = Field(DEFAULT_TTL_S, ge=MIN_TTL_S, le=MAX_TTL_S, strict=True)


def _item_ids(value: Any) -> List[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_IDS:
        raise ValueError(f"ids must be a list of 1 to {MAX_IDS} review item ids")
    for item_id in value:
        if not isinstance(item_id, str) or not valid_event_id(item_id):
            shown = item_id[:80] if isinstance(item_id, str) else type(item_id).__name__
            raise ValueError(f"a review item id must match {EVENT_ID_PATTERN}, got {shown!r}")
    return value


def _before_time(value: Any) -> float:
    """Unix seconds as a JSON number, or a time's text by the query parameters' rule."""
    if isinstance(value, str):
        try:
            return parse_time(value, "before")
        except ApiError as err:
            raise ValueError(err.message) from None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and 0 <= value <= LARGEST_TIME_S:
        return float(value)
    raise ValueError("before must be Unix seconds (a number) or an ISO 8601 date and time")


def _reviewed(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("reviewed must be true or false")
    return value


class ReviewMark(ReviewFilters):
    """Either ids, or before with filters (every item of the filters starting at or before it)."""

    model_config = ConfigDict(extra="forbid")

    ids: Annotated[Optional[List[str]], BeforeValidator(_item_ids), WithJsonSchema(
        {"type": "array", "items": ITEM_ID, "minItems": 1, "maxItems": MAX_IDS})] = None
    before: Annotated[Optional[float], BeforeValidator(_before_time), WithJsonSchema(
        {"anyOf": [{"type": "number", "minimum": 0}, TIME]}),
        Field(description="Unix seconds or ISO 8601 (without a zone: UTC)")] = None
    reviewed: Annotated[bool, BeforeValidator(_reviewed)] = Field(True,
                                                                  description="false marks them not reviewed again")

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, body: Any) -> Any:
        """The body's shape, each mistake with the sentence that shows the right one."""
        if not isinstance(body, dict):
            raise ValueError('the body must be a JSON object: {"ids": [...]} or {"before": <time>, ...filters}')
        filters = tuple(ReviewFilters.model_fields)
        unknown = sorted(set(body) - set(cls.model_fields))
        if unknown:
            raise ValueError(f"unknown keys {unknown[:5]}; the body takes ids, or before with {', '.join(filters)}; "
                             "and reviewed (true or false)")
        if "reviewed" in body:
            _reviewed(body["reviewed"])  # before the rest, so that a wrong one is named whatever else is wrong
        if ("ids" in body) == ("before" in body):
            raise ValueError('send either "ids" (items to mark) or "before" (every item of the filters up to a time)')
        if "ids" in body and any(name in body for name in filters):
            raise ValueError("filters go with before, not with ids")
        return body
