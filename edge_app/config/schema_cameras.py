"""The cameras' sections of the configuration: a camera, its zones, lines and motion gating, and
the device's motion settings (``edge_app.config.schema.AppConfig`` holds them)."""
from __future__ import annotations

from typing import List, Literal, Optional

from pydantic import Field, ValidationInfo, field_validator
from typing_extensions import Annotated

from edge_app.config.model_names import DEFAULT_MODEL, MODEL_NAME_PATTERN
from edge_app.config.schema_privacy import CameraPrivacyConfig
from edge_app.config.schema_record import CameraRecordConfig
from edge_app.config.schema_review import CameraReviewConfig
from edge_app.config.schema_speed import LineSpeedConfig, ZoneSpeedConfig
from edge_app.config.schema_rules import ID_PATTERN, MAX_AREA_LABELS, NormPoint, _clean_labels, _Strict
from edge_app.config.source_spec import parse_source

MAX_ZONES_PER_CAMERA = 32
MAX_LINES_PER_CAMERA = 32
MAX_POLYGON_POINTS = 64
MAX_MOTION_MASKS = 32
MAX_LOITERING_S = 7 * 24 * 3600.0
MAX_ZONE_OBJECTS = 10_000


def _polygon_with_area(value: List[NormPoint]) -> List[NormPoint]:
    """The one rule for polygons in frame fractions (zones, motion masks): they enclose an area."""
    twice_area = sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(value, value[1:] + value[:1]))
    if abs(twice_area) < 1e-9:
        raise ValueError("the polygon encloses no area")
    return value


class ZoneConfig(_Strict):
    """A polygon in which objects are counted and events note their presence."""

    name: str = Field(title="Zone name", pattern=ID_PATTERN, description="Unique across the whole device")
    polygon: List[NormPoint] = Field(
        title="Polygon", min_length=3, max_length=MAX_POLYGON_POINTS,
        description="At least 3 [x, y] points, fractions of the frame (x right, y down)",
    )
    labels: List[str] = Field(default_factory=list, title="Labels", max_length=MAX_AREA_LABELS, description="Labels that count here; empty = every label")
    loitering_s: Optional[float] = Field(
        None, title="Loitering after (s)", gt=0, le=MAX_LOITERING_S, allow_inf_nan=False,
        description="An object of the zone's labels inside longer than this makes a loitering event; "
                    "needs labels; null: no loitering events",
    )
    max_objects: Optional[int] = Field(
        None, title="Most objects", ge=0, le=MAX_ZONE_OBJECTS,
        description="More objects than this inside at once raise the zone's occupancy alert; null: no alert",
    )
    speed: Optional[ZoneSpeedConfig] = Field(
        None, title="Speed", description="Measure the speed of objects passing through this zone; left out: no "
                                         "speed (docs/analytics.md)")

    @field_validator("polygon")
    @classmethod
    def _has_area(cls, value: List[NormPoint]) -> List[NormPoint]:
        return _polygon_with_area(value)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: List[str]) -> List[str]:
        return _clean_labels(value)

    @field_validator("loitering_s")
    @classmethod
    def _loitering_names_labels(cls, value: Optional[float], info: ValidationInfo) -> Optional[float]:
        # A loitering rule on every label would flag parked cars and the furniture a model
        # mistakes for something: the zone must say which objects loiter. (labels is declared
        # first, so it has been validated; absent from data when it was itself invalid.)
        if value is not None and "labels" in info.data and not info.data["labels"]:
            raise ValueError("loitering_s needs the zone's labels (the objects that loiter, e.g. [person])")
        return value


class LineConfig(_Strict):
    """A tripwire from P1 to P2 counting crossings in both directions."""

    name: str = Field(title="Line name", pattern=ID_PATTERN, description="Unique across the whole device")
    points: List[NormPoint] = Field(
        title="Points", min_length=2, max_length=2,
        description="[P1, P2], fractions of the frame; with P1 above P2, moving from right to left is 'in'",
    )
    labels: List[str] = Field(default_factory=list, title="Labels", max_length=MAX_AREA_LABELS, description="Labels that count here; empty = every label")
    speed: Optional[LineSpeedConfig] = Field(
        None, title="Speed", description="Measure the speed of objects crossing this line and then to_line (or the "
                                         "other way); left out: no speed (docs/analytics.md)")

    @field_validator("points")
    @classmethod
    def _two_different_points(cls, value: List[NormPoint]) -> List[NormPoint]:
        if tuple(value[0]) == tuple(value[1]):
            raise ValueError("the two points of a line must differ")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: List[str]) -> List[str]:
        return _clean_labels(value)


MaskPolygon = Annotated[List[NormPoint], Field(min_length=3, max_length=MAX_POLYGON_POINTS)]


class MotionConfig(_Strict):
    """Motion gating: a camera's frames go to the model while something moves in it, while it has
    tracked objects, and every keepalive_s otherwise."""

    enabled: bool = Field(True, title="Motion gating", description="Off: every frame goes to the model")
    threshold: int = Field(25, title="Motion threshold", ge=1, le=255,
                           description="Grey levels (of 255) a pixel must change by to count as moving")
    min_area: float = Field(0.0005, title="Smallest motion (fraction of the frame)", gt=0, le=1, allow_inf_nan=False,
                            description="A moving region at least this large is motion; 0.0005 is about 1000 px of 1080p")
    keepalive_s: float = Field(5.0, title="Keepalive (s)", ge=0.1, le=3600, allow_inf_nan=False,
                               description="A camera without motion or tracked objects is still analysed this often")


class CameraMotionConfig(_Strict):
    """A camera's motion gating: on or off, and where motion does not count."""

    enabled: bool = Field(True, title="Motion gating", description="Off: every frame of this camera goes to the model "
                                                                    "(also off while motion.enabled is off)")
    masks: List[MaskPolygon] = Field(
        default_factory=list, title="Motion masks", max_length=MAX_MOTION_MASKS,
        description="Polygons of at least 3 [x, y] points, fractions of the frame, where motion does not count "
                    "(trees, a clock, a road outside the scene); masking the whole frame leaves the keepalive",
    )

    @field_validator("masks")
    @classmethod
    def _masks_have_area(cls, value: List[List[NormPoint]]) -> List[List[NormPoint]]:
        for index, polygon in enumerate(value):
            try:
                _polygon_with_area(polygon)
            except ValueError as err:
                raise ValueError(f"masks[{index}]: {err}") from None
        return value


class CameraConfig(_Strict):
    id: str = Field(title="Camera id", pattern=ID_PATTERN, description="Unique id used in MQTT topics and API paths")
    source: str = Field(title="Source", min_length=1, description="rtsp://, http(s)://, file, /dev/videoN, csi://N, gst:..., test://")
    enabled: bool = Field(True, title="Enabled")
    fps_limit: float = Field(0, title="FPS limit", ge=0, description="Max analysed frames/s; 0 = as many as arrive")
    loop: bool = Field(False, title="Loop file")
    realtime: bool = Field(True, title="Real-time file pacing")
    decoder: Literal["auto", "ffmpeg", "gstreamer", "nvdec"] = Field(
        "auto",
        title="Decoder",
        description="auto: hardware decode where the device has it (GStreamer on Jetson, NVDEC on dGPU hosts), else ffmpeg",
    )
    detect: bool = Field(True, title="Detect", description="Analyse this camera; off keeps it streaming without detections")
    zones: List[ZoneConfig] = Field(default_factory=list, title="Zones", max_length=MAX_ZONES_PER_CAMERA)
    lines: List[LineConfig] = Field(default_factory=list, title="Lines", max_length=MAX_LINES_PER_CAMERA)
    motion: CameraMotionConfig = Field(default_factory=CameraMotionConfig, title="Motion")
    model: str = Field(DEFAULT_MODEL, title="Model", pattern=MODEL_NAME_PATTERN,
                       description="The name of the model that analyses this camera (model is named default)")
    record: CameraRecordConfig = Field(default_factory=CameraRecordConfig, title="Recording",
                                       description="This camera's own recording choices; left out: the record section's")
    review: CameraReviewConfig = Field(default_factory=CameraReviewConfig, title="Review",
                                       description="This camera's own alert rules; left out: the review section's")
    privacy: CameraPrivacyConfig = Field(default_factory=CameraPrivacyConfig, title="Privacy",
                                         description="Areas masked in everything the device sends (docs/privacy.md)")

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        # The one grammar of sources (capture opens what it accepts); SourceError is a ValueError.
        value = value.strip()
        parse_source(value)
        return value
