"""The ``profiles`` section: named sets of overrides and the weekly schedule that switches them
(docs/profiles.md).

A profile overrides a few settings of the configuration while it is active (detection per camera,
zones on or off, the device's alert rules, the recording mode, quiet hours of every notification
target); the rest of the file is the base every profile starts from. ``active`` and ``hold_until``
are written by the switches (REST, MQTT, the schedule) through the one change path, so the file
says which profile is in force and a restart keeps it.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Dict, Iterable, List, Literal, Optional, Tuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from edge_app.config.model_names import LocatedError
from edge_app.config.schema_notify import QuietHoursConfig, minute_of_day
from edge_app.config.schema_review import ReviewAlertsConfig
from edge_app.config.schema_rules import ID_PATTERN, _Strict

MAX_PROFILES = 16
MAX_SCHEDULE_ENTRIES = 64
#: the days of a schedule entry, Monday first (``datetime.weekday()`` order)
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY
#: Area/Location, each part letters, digits, _, + or - (no "..", no leading /: never a path of its own)
_ZONE_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$")
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
#: what a profile makes every camera record: nothing, event clips, continuous segments, or both
RecordMode = Literal["off", "events", "continuous", "events_and_continuous"]


class ProfileConfig(_Strict):
    """One named set of overrides; a key left out keeps the base configuration's setting."""

    name: str = Field(title="Profile name", pattern=ID_PATTERN, description="Shown in status, MQTT and Home Assistant")
    detect: Dict[str, bool] = Field(default_factory=dict, title="Detection per camera", max_length=64,
                                    description="Camera id -> detection on (true) or off (false) while active")
    zones: Dict[str, bool] = Field(default_factory=dict, title="Zones on or off", max_length=256,
                                   description="Zone name -> on (true) or off (false) while active; a zone that is "
                                               "off counts nothing and no event enters it")
    alerts: Optional[ReviewAlertsConfig] = Field(None, title="Alert rules",
                                                 description="In place of review.alerts while active (cameras with "
                                                             "their own review.alerts keep them)")
    record: Optional[RecordMode] = Field(None, title="Recording mode",
                                         description="off, events, continuous or events_and_continuous for every "
                                                     "camera while active; left out: as configured")
    quiet_hours: Optional[QuietHoursConfig] = Field(None, title="Notification quiet hours",
                                                    description="Quiet hours of every notification target while active")


class ScheduleEntryConfig(_Strict):
    """A weekly period, in the profiles' time zone, in which a profile is active."""

    profile: str = Field(title="Profile", pattern=ID_PATTERN, description="A name in profiles.definitions")
    days: List[Day] = Field(title="Days", min_length=1, max_length=7,
                            description="The days the period starts on: mon, tue, wed, thu, fri, sat, sun")
    start: str = Field(title="From (HH:MM)", description="Local time the profile becomes active")
    end: str = Field(title="Until (HH:MM)", description="Local time it ends; at or before start: the next day "
                                                        "(22:00 to 06:00)")

    @field_validator("start", "end")
    @classmethod
    def _time_of_day(cls, value: str) -> str:
        minute_of_day(value)
        return value

    @field_validator("days")
    @classmethod
    def _days_once(cls, value: List[str]) -> List[str]:
        if len(set(value)) != len(value):
            raise ValueError("a day may be named once")
        return value

    def week_intervals(self) -> List[Tuple[int, int]]:
        """[start, end) in minutes of the week (Monday 00:00 is 0); a period past Sunday midnight wraps."""
        start, end = minute_of_day(self.start), minute_of_day(self.end)
        length = end - start if end > start else end + MINUTES_PER_DAY - start
        intervals = []
        for day in self.days:
            begin = DAYS.index(day) * MINUTES_PER_DAY + start
            finish = begin + length
            intervals.append((begin, min(finish, MINUTES_PER_WEEK)))
            if finish > MINUTES_PER_WEEK:
                intervals.append((0, finish - MINUTES_PER_WEEK))
        return intervals


class ProfilesConfig(_Strict):
    """Named profiles, the weekly schedule that switches them, and the one in force."""

    timezone: Optional[str] = Field(None, title="Time zone", max_length=64,
                                    description="IANA name (Europe/Paris) the schedule is read in; null: the system's")
    default: Optional[str] = Field(None, title="Profile outside the schedule", pattern=ID_PATTERN,
                                   description="Active when no schedule entry is; null: the base configuration")
    active: Optional[str] = Field(None, title="Active profile", pattern=ID_PATTERN,
                                  description="Written by the switches (REST, MQTT, schedule, fleet); null: none")
    hold_until: Optional[str] = Field(None, title="Manual switch holds until", max_length=40,
                                      description="Written by a manual switch: the next scheduled boundary (ISO 8601 "
                                                  "with offset); the schedule takes over from then. null: no hold")
    definitions: List[ProfileConfig] = Field(default_factory=list, title="Profile definitions", max_length=MAX_PROFILES)
    schedule: List[ScheduleEntryConfig] = Field(default_factory=list, title="Weekly schedule",
                                                max_length=MAX_SCHEDULE_ENTRIES)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        # The shape of an IANA key first: ZoneInfo() opens the file its key names under the zoneinfo folders.
        if not _ZONE_KEY.match(value):
            raise ValueError(f"{value[:64]!r} is not an IANA time zone name (Europe/Paris, America/New_York, UTC)")
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"{value!r} is not an IANA time zone name this system knows "
                             "(Europe/Paris, America/New_York, UTC)") from None
        return value

    @field_validator("hold_until")
    @classmethod
    def _aware_time(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("must be an ISO 8601 time with an offset (2026-03-29T08:00:00+02:00)") from None
        if moment.utcoffset() is None:
            raise ValueError("must carry an offset from UTC (2026-03-29T08:00:00+02:00)")
        return value

    def names(self) -> List[str]:
        return [profile.name for profile in self.definitions]

    def profile(self, name: Optional[str]) -> Optional[ProfileConfig]:
        return next((p for p in self.definitions if p.name == name), None)


def _day_time(minute: int) -> str:
    return f"{DAYS[minute // MINUTES_PER_DAY]} {minute % MINUTES_PER_DAY // 60:02d}:{minute % 60:02d}"


def _overlap(profiles: ProfilesConfig) -> None:
    seen: List[Tuple[int, int, int]] = []  # (start, end, entry index)
    for index, entry in enumerate(profiles.schedule):
        for start, end in entry.week_intervals():
            for other_start, other_end, other in seen:
                if start < other_end and other_start < end:
                    raise LocatedError(f"profiles.schedule.{index}",
                                       f"overlaps profiles.schedule.{other} from {_day_time(max(start, other_start))}: "
                                       "a moment of the week may belong to one entry only")
            seen.append((start, end, index))


def check_profiles(profiles: ProfilesConfig, cameras: Iterable[object]) -> None:
    """``LocatedError`` for the first profile rule across sections broken: names used twice, a
    profile, camera or zone that does not exist, a schedule that overlaps itself."""
    names = profiles.names()
    for index, name in enumerate(names):
        if name in names[:index]:
            raise LocatedError(f"profiles.definitions.{index}.name", f"the profile name {name!r} is used twice")
    known = ", ".join(names) or "none"
    for key in ("default", "active"):
        name = getattr(profiles, key)
        if name is not None and name not in names:
            raise LocatedError(f"profiles.{key}", f"there is no profile {name!r} (profiles: {known})")
    for index, entry in enumerate(profiles.schedule):
        if entry.profile not in names:
            raise LocatedError(f"profiles.schedule.{index}.profile", f"there is no profile {entry.profile!r} "
                                                                     f"(profiles: {known})")
    cameras = list(cameras)
    camera_ids = [cam.id for cam in cameras]
    zone_names = [zone.name for cam in cameras for zone in cam.zones]
    for index, profile in enumerate(profiles.definitions):
        for camera_id in profile.detect:
            if camera_id not in camera_ids:
                raise LocatedError(f"profiles.definitions.{index}.detect.{camera_id[:64]}",
                                   f"there is no camera {camera_id[:64]!r} (cameras: {', '.join(camera_ids) or 'none'})")
        for zone in profile.zones:
            if zone not in zone_names:
                raise LocatedError(f"profiles.definitions.{index}.zones.{zone[:64]}",
                                   f"no camera has a zone named {zone[:64]!r} (zones: {', '.join(zone_names) or 'none'})")
        for zi, zone in enumerate(profile.alerts.zones if profile.alerts else []):
            if zone not in zone_names:
                raise LocatedError(f"profiles.definitions.{index}.alerts.zones.{zi}",
                                   f"no camera has a zone named {zone!r} (zones: {', '.join(zone_names) or 'none'})")
    _overlap(profiles)


__all__ = ["DAYS", "ProfileConfig", "ProfilesConfig", "RecordMode", "ScheduleEntryConfig", "check_profiles"]
