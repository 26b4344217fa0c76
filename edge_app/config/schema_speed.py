"""Speed measurement on a line pair (``cameras[].lines[].speed``) or through a zone of known length
(``cameras[].zones[].speed``); docs/analytics.md, "Speed".

A line with a ``speed`` section names a second line of the same camera (``to_line``) and the
real-world distance between the two along the path objects travel (``distance_m``). An object
that crosses one line of the pair and then the other gets a speed estimate: the distance over
the time between the two crossings, on the camera's capture-time line. ``max_kmh`` makes a
measurement above it an alert.

The two lines of a pair must not cross or touch each other: an object at their common point
would cross both at once, and its "speed" would be the distance over nothing.
"""
from __future__ import annotations

from typing import Iterable, Literal, Optional

from pydantic import Field

from edge_app.config.model_names import LocatedError
from edge_app.config.schema_privacy import segments_touch
from edge_app.config.schema_rules import ID_PATTERN, _Strict

#: 10 km between two lines of one camera's picture is beyond any lens; a bound on nonsense
MAX_SPEED_DISTANCE_M = 10_000.0
#: faster than any road vehicle; a limit above it is a typo
MAX_SPEED_LIMIT_KMH = 1_000.0
SPEED_UNITS = ("kmh", "mph")


class LineSpeedConfig(_Strict):
    """A speed measurement between this line and another line of the camera."""

    to_line: str = Field(
        title="Second line", pattern=ID_PATTERN,
        description="The other line of the pair, a line of the same camera that does not cross or touch this one")
    distance_m: float = Field(
        title="Distance (m)", gt=0, le=MAX_SPEED_DISTANCE_M, allow_inf_nan=False,
        description="Real-world distance between the two lines along the path objects travel, in metres")
    max_kmh: Optional[float] = Field(
        None, title="Speed limit (km/h)", gt=0, le=MAX_SPEED_LIMIT_KMH, allow_inf_nan=False,
        description="A measured speed above this is an alert (the event's review item becomes an alert); "
                    "left out: no limit")
    unit: Literal["kmh", "mph"] = Field(
        "kmh", title="Unit", description="kmh: crossings carry speed_kmh; mph: speed_mph as well (speed_kmh always)")


class ZoneSpeedConfig(_Strict):
    """A speed measurement through a zone: its length along the objects' path."""

    distance_m: float = Field(
        title="Length (m)", gt=0, le=MAX_SPEED_DISTANCE_M, allow_inf_nan=False,
        description="Real-world distance from where objects come into the zone to where they leave it, along "
                    "their path, in metres")
    max_kmh: Optional[float] = Field(
        None, title="Speed limit (km/h)", gt=0, le=MAX_SPEED_LIMIT_KMH, allow_inf_nan=False,
        description="A measured speed above this is an alert (the event's review item becomes an alert); "
                    "left out: no limit")
    unit: Literal["kmh", "mph"] = Field("kmh", title="Unit", description="The unit the dashboard shows (speed_kmh "
                                                                         "is always published)")


def check_speed_pairs(cameras: Iterable[object]) -> None:
    """``LocatedError`` for the first line speed section whose pair is not a pair: an unknown or
    same line, two lines that cross or touch, or a pair given twice (each passage would be
    measured twice, perhaps with two distances)."""
    for ci, cam in enumerate(cameras):
        lines = {line.name: line for line in cam.lines}
        paired = {}
        for li, line in enumerate(cam.lines):
            speed: Optional[LineSpeedConfig] = line.speed
            if speed is None:
                continue
            where = f"cameras.{ci}.lines.{li}.speed.to_line"
            other = lines.get(speed.to_line)
            if speed.to_line == line.name:
                raise LocatedError(where, f"line {line.name!r} cannot be paired with itself")
            if other is None:
                known = ", ".join(sorted(set(lines) - {line.name})) or "none"
                raise LocatedError(where, f"camera {cam.id!r} has no line named {speed.to_line!r} "
                                          f"(its other lines: {known})")
            (a, b), (c, d) = line.points, other.points
            if segments_touch(a, b, c, d):
                raise LocatedError(where, f"lines {line.name!r} and {other.name!r} cross or touch each other; "
                                          "the two lines of a speed pair must be apart")
            pair = frozenset((line.name, other.name))
            if pair in paired:
                raise LocatedError(where, f"lines {line.name!r} and {other.name!r} are already a speed pair "
                                          f"({paired[pair]})")
            paired[pair] = f"cameras.{ci}.lines.{li}.speed"
