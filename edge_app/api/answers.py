"""Typed answers of the API that no layer below it already has a type for.

Status, cameras, events, counts and the configuration are answered from the appliance's own
typed objects (``edge_app.reporting.protocol``, ``edge_app.events.model``,
``edge_app.config.schema``); the models here are the API's own bodies. The OpenAPI document
takes its schemas from these types (pydantic generates them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from edge_app.api.routing import tidy_schema
from edge_app.events.model import Event


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=tidy_schema)


@dataclass(frozen=True)
class EventList:
    """The body of ``GET /api/v1/events``: stored events, newest first."""

    events: List[Event]
    total: Annotated[int, Field(ge=0, description="How many events match the filters, whatever limit and offset")]


class Segment(_Answer):
    camera_id: str
    start: float = Field(description="Unix seconds of its first frame")
    end: float = Field(description="Unix seconds of its last frame (grows while it is written)")
    bytes: int = Field(ge=0)


class SegmentList(_Answer):
    segments: List[Segment]


class SignedUrl(_Answer):
    url: str = Field(description="Path and query, relative to the API's root; needs no token")
    expires: Optional[int] = Field(
        description="Unix seconds; null when api.token is not set (the plain route is open, it never expires)")


class ClipUrl(SignedUrl):
    part: int = Field(ge=0, description="The part this URL plays")
    parts: int = Field(ge=1, description="How many parts the clip has (it continues in a new part every "
                                         "record.events.max_s); play them in order, part=0 to parts-1")


class EventTrackAnswer(_Answer):
    event_id: str
    start_time: float = Field(description="The event's start, Unix seconds: a point is at start_time + t_s")
    points: List[List[float]] = Field(description="[t_s, x1, y1, x2, y2] oldest first: the box t_s seconds after the "
                                                  "start, as fractions of the frame (at most 200, evenly thinned); "
                                                  "none while the event is open")
    clip_starts: List[float] = Field(description="Unix seconds of the first frame of each part of the event's clip "
                                                 "(part 0 first); empty without a clip: where a point is in the clip")


class ReviewMarked(_Answer):
    changed: int = Field(description="Marks added (or removed)")


class Alive(_Answer):
    status: Literal["ok"]


class Ready(_Answer):
    ready: Literal[True]


class NotReady(_Answer):
    ready: Literal[False]
    reasons: List[str]
    error: str
