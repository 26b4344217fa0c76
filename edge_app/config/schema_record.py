"""The ``record`` section: event clips with pre-roll, continuous segments and retention, and a
camera's own ``cameras[].record`` choices; ``resolve_record`` merges the two for one camera."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from pydantic import Field, field_validator

from edge_app.config.schema_rules import _no_control_chars, _Strict

MAX_PRE_S = 60.0
MAX_POST_S = 600.0
MAX_CLIP_S = 3600.0


class RecordEventsConfig(_Strict):
    """A clip of every event: from the last keyframe at or before start - pre_s to end + post_s."""

    enabled: bool = Field(False, title="Event clips", description="Record a clip of every event (cameras[].record.enabled overrides it)")
    pre_s: float = Field(5, title="Pre-roll (s)", ge=0, le=MAX_PRE_S, allow_inf_nan=False,
                         description="Seconds before the event's start kept in memory and written into its clip "
                                     "(plus up to one GOP: a clip starts at a keyframe)")
    post_s: float = Field(5, title="Post-roll (s)", ge=0, le=MAX_POST_S, allow_inf_nan=False,
                          description="Seconds after the event's end written into its clip")
    max_s: float = Field(300, title="Longest clip (s)", ge=10, le=MAX_CLIP_S, allow_inf_nan=False,
                         description="A clip this long ends and a new clip of the same event continues it")
    max_concurrent: int = Field(16, title="Clips at once", ge=1, le=256,
                                description="Events of one camera whose clips are written at once (overlapping events "
                                            "share one file); an event beyond is stored without a clip, and counted")
    max_mb_per_hour: float = Field(4096, title="Clip MiB per hour", gt=0, le=1_048_576, allow_inf_nan=False,
                                   description="Clip bytes one camera may write in an hour; beyond, clips end and "
                                               "events are stored without one (counted) until the hour's total falls")


class RecordContinuousConfig(_Strict):
    """Recording around the clock in segments named by camera and UTC start time."""

    enabled: bool = Field(False, title="Continuous recording", description="Write every camera's stream in segments "
                                                                           "(cameras[].record.continuous overrides it)")
    segment_s: float = Field(60, title="Segment length (s)", ge=10, le=3600, allow_inf_nan=False,
                             description="A new segment starts at the first keyframe after this many seconds")


class RecordRetainConfig(_Strict):
    """What is deleted, oldest first, and when writing pauses to keep the disk from filling."""

    events_days: float = Field(30, title="Keep event clips (days)", gt=0, le=3650, allow_inf_nan=False)
    continuous_days: float = Field(3, title="Keep segments (days)", gt=0, le=3650, allow_inf_nan=False,
                                   description="Segments holding frames of a kept event clip are kept as long as the clip")
    max_disk_percent: float = Field(80, title="Disk use at most (%)", ge=1, le=99, allow_inf_nan=False,
                                    description="Oldest recordings are deleted while the recording folder's file system is fuller")
    max_gb: Optional[float] = Field(None, title="Recordings at most (GB)", gt=0, le=1_000_000, allow_inf_nan=False,
                                    description="Oldest recordings are deleted beyond this size (10^9 bytes); null: no limit of its own")
    reserve_mb: int = Field(512, title="Free-space reserve (MiB)", ge=0, le=1_048_576,
                            description="Writing pauses (the reason is shown) while less is free, and resumes by itself")


class RecordConfig(_Strict):
    """Event clips and continuous recording by stream copy (no re-encoding) as fragmented MP4."""

    dir: str = Field("recordings", title="Recordings directory", min_length=1,
                     description="Clips, segments and their index (SQLite), relative to the working directory")
    events: RecordEventsConfig = Field(default_factory=RecordEventsConfig, title="Event clips")
    continuous: RecordContinuousConfig = Field(default_factory=RecordContinuousConfig, title="Continuous recording")
    retain: RecordRetainConfig = Field(default_factory=RecordRetainConfig, title="Retention")

    @field_validator("dir")
    @classmethod
    def _dir_chars(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("record.dir may not be blank")
        return _no_control_chars(value, "record.dir")


class CameraRecordConfig(_Strict):
    """A camera's own recording choices; a key left out (null) follows the device's ``record`` section."""

    enabled: Optional[bool] = Field(None, title="Event clips", description="Overrides record.events.enabled for this camera")
    continuous: Optional[bool] = Field(None, title="Continuous recording",
                                       description="Overrides record.continuous.enabled for this camera")
    pre_s: Optional[float] = Field(None, title="Pre-roll (s)", ge=0, le=MAX_PRE_S, allow_inf_nan=False,
                                   description="Overrides record.events.pre_s")
    post_s: Optional[float] = Field(None, title="Post-roll (s)", ge=0, le=MAX_POST_S, allow_inf_nan=False,
                                    description="Overrides record.events.post_s")


@dataclass(frozen=True)
class RecordSettings:
    """What the recorder of one camera does: the device's section with the camera's overrides."""

    camera_id: str
    events_enabled: bool
    pre_s: float
    post_s: float
    max_s: float
    continuous_enabled: bool
    segment_s: float
    max_concurrent: int = 16
    max_mb_per_hour: float = 4096.0

    @property
    def any_enabled(self) -> bool:
        return self.events_enabled or self.continuous_enabled


def resolve_record(record: RecordConfig, camera_id: str, camera: Optional[CameraRecordConfig]) -> RecordSettings:
    """The recording settings of one camera (``camera`` is its ``record`` section, or None)."""
    own = camera or CameraRecordConfig()

    def pick(override, default):
        return default if override is None else override

    return RecordSettings(
        camera_id=camera_id,
        events_enabled=pick(own.enabled, record.events.enabled),
        pre_s=float(pick(own.pre_s, record.events.pre_s)),
        post_s=float(pick(own.post_s, record.events.post_s)),
        max_s=float(record.events.max_s),
        continuous_enabled=pick(own.continuous, record.continuous.enabled),
        segment_s=float(record.continuous.segment_s),
        max_concurrent=record.events.max_concurrent,
        max_mb_per_hour=float(record.events.max_mb_per_hour),
    )
