"""A camera's privacy masks (``cameras[].privacy``): polygons whose pixels never leave the device.

A mask is blacked out (or blurred) in every picture the device sends: snapshots, event
snapshots, the live view and, re-encoded, recordings (docs/privacy.md). The polygons are checked
strictly, since a mask that silently covers nothing exposes what its owner meant to hide.
"""
from __future__ import annotations

from typing import List, Literal, Optional

from pydantic import Field, field_validator

from edge_app.config.schema_rules import NormPoint, _Strict

MAX_PRIVACY_MASKS = 32
MAX_MASK_POINTS = 64
#: a polygon enclosing less than this (twice the area, in frame fractions) covers nothing
_MIN_TWICE_AREA = 1e-9


def _cross(o: NormPoint, a: NormPoint, b: NormPoint) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(p: NormPoint, a: NormPoint, b: NormPoint) -> bool:
    return min(a[0], b[0]) <= p[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])


def segments_touch(a: NormPoint, b: NormPoint, c: NormPoint, d: NormPoint) -> bool:
    """Whether the closed segments a-b and c-d share a point (crossing, touching or overlapping)."""
    d1, d2, d3, d4 = _cross(c, d, a), _cross(c, d, b), _cross(a, b, c), _cross(a, b, d)
    if ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4)):
        return True
    return ((d1 == 0 and _on_segment(a, c, d)) or (d2 == 0 and _on_segment(b, c, d))
            or (d3 == 0 and _on_segment(c, a, b)) or (d4 == 0 and _on_segment(d, a, b)))


def polygon_problem(points: List[NormPoint]) -> Optional[str]:
    """Why ``points`` is not a simple polygon with an area (None: it is one)."""
    seen = {}
    for index, point in enumerate(points):
        key = (float(point[0]), float(point[1]))
        if key in seen:
            return f"points {seen[key]} and {index} are the same point {list(key)}"
        seen[key] = index
    count = len(points)
    edges = [(points[i], points[(i + 1) % count]) for i in range(count)]
    for i in range(count):
        for j in range(i + 1, count):
            if j == i + 1 or (i == 0 and j == count - 1):
                continue  # neighbours share a corner by construction
            if segments_touch(*edges[i], *edges[j]):
                return f"the polygon crosses itself (edges {i} and {j})"
    twice_area = sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]))
    if abs(twice_area) < _MIN_TWICE_AREA:
        return "the polygon encloses no area"
    return None


class PrivacyMaskConfig(_Strict):
    """One masked area."""

    polygon: List[NormPoint] = Field(
        title="Polygon", min_length=3, max_length=MAX_MASK_POINTS,
        description="At least 3 distinct [x, y] points, fractions of the frame (x right, y down), not crossing itself",
    )
    style: Literal["black", "blur"] = Field(
        "black", title="Style", description="black: the area is painted black; blur: it is blurred beyond recognition")

    @field_validator("polygon")
    @classmethod
    def _simple(cls, value: List[NormPoint]) -> List[NormPoint]:
        why = polygon_problem(value)
        if why:
            raise ValueError(why)
        return value


class CameraPrivacyConfig(_Strict):
    """Areas of the picture that never leave the device: not in snapshots, the live view or recordings."""

    masks: List[PrivacyMaskConfig] = Field(
        default_factory=list, title="Privacy masks", max_length=MAX_PRIVACY_MASKS,
        description="Polygons blacked out or blurred in every snapshot, event snapshot, live view and recording; "
                    "a masked camera's recordings are re-encoded (docs/privacy.md)",
    )
    detect: bool = Field(True, title="Detect in masks",
                         description="false: the detector does not see the masked areas either (they are masked "
                                     "before detection)")
    record_height: Optional[int] = Field(
        None, title="Recording height (px)", ge=64, le=4320,
        description="Height of a masked camera's re-encoded recordings (width follows the aspect ratio); "
                    "null: the source's")

    @field_validator("record_height")
    @classmethod
    def _even(cls, value: Optional[int]) -> Optional[int]:
        if value is not None and value % 2:
            raise ValueError("the height of an H.264 picture is even")
        return value

    @property
    def active(self) -> bool:
        return bool(self.masks)
