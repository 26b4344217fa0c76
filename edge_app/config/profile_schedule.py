"""Which profile is in force at a moment, and when that changes next: pure, the time passed in.

The schedule is read on the wall clock of the profiles' time zone, so 08:00 stays 08:00 across a
daylight saving change. Two rules make a wall clock that jumps behave (docs/profiles.md):

* a boundary at a time the clock skips (02:30 on the spring-forward night) happens when the
  clock jumps over it;
* in the hour the clock repeats (autumn), the schedule stands still where the first pass ended:
  a boundary inside that hour happens once, on the first pass, and is not undone by the repeat.

A manual switch holds until the next scheduled boundary (``hold_until``); the schedule never
switches away from it earlier. With no schedule (or one that never changes profile) the active
profile is what was switched to last, else the default.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import List, Optional, Sequence, Tuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from edge_app.config.schema_profiles import MINUTES_PER_DAY, ProfilesConfig, ScheduleEntryConfig
from edge_app.config.schema_notify import minute_of_day

#: how far ahead a boundary is looked for: a weekly schedule repeats within a week, plus a day of slack
LOOKAHEAD_DAYS = 8
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class ProfileState:
    """The profile in force at ``at`` and why; the next boundary of the schedule, if any."""

    active: Optional[str]  # None: the base configuration, no profile
    source: str  # "manual" (held), "schedule", "switched" (no schedule: the last switch), "default"
    hold_until: Optional[datetime]  # a manual switch still holding: until then
    next_boundary: Optional[datetime]  # UTC; None when the schedule never changes profile
    next_profile: Optional[str]  # what the schedule switches to at next_boundary


def schedule_zone(profiles: ProfilesConfig) -> tzinfo:
    """The configured zone, else the system's (TZ, then /etc/localtime), else UTC."""
    if profiles.timezone:
        return ZoneInfo(profiles.timezone)
    name = os.environ.get("TZ", "").lstrip(":")
    target = os.path.realpath("/etc/localtime")
    if not name and "/zoneinfo/" in target:
        name = target.split("/zoneinfo/", 1)[1]  # the zone's name, for status, rather than "localtime"
    try:
        if name:
            return ZoneInfo(name)
        with Path("/etc/localtime").open("rb") as handle:  # the system's rules, daylight saving included
            return ZoneInfo.from_file(handle, key="localtime")
    except (OSError, ValueError, ZoneInfoNotFoundError):
        return timezone.utc


def _to_epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _from_epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def _first_true(lo: int, hi: int, test) -> int:
    """The first second in (lo, hi] where ``test`` holds (it holds at hi and stays true after)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if test(mid):
            hi = mid
        else:
            lo = mid
    return hi


def schedule_wall(instant: datetime, zone: tzinfo) -> datetime:
    """The naive wall time the schedule reads at ``instant``: held during a repeated hour."""
    local = instant.astimezone(zone)
    first_offset = local.replace(fold=0).utcoffset()
    if local.fold == 1 and first_offset is not None and first_offset != local.utcoffset():
        repeat = first_offset - local.utcoffset()
        start = _first_true(_to_epoch(instant - repeat), _to_epoch(instant),
                            lambda s: _from_epoch(s).astimezone(zone).fold == 1)
        local = (_from_epoch(start) - timedelta(microseconds=1)).astimezone(zone)
    return local.replace(tzinfo=None)


def instant_of_wall(wall: datetime, zone: tzinfo) -> datetime:
    """The UTC instant the schedule reaches the naive ``wall`` time: its first pass, or the jump over it."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(timezone.utc)
    if first.astimezone(zone).replace(tzinfo=None) == wall:
        return first
    other = wall.replace(tzinfo=zone, fold=1).astimezone(timezone.utc)
    lo, hi = sorted((_to_epoch(first), _to_epoch(other)))
    return _from_epoch(_first_true(lo - 1, hi, lambda s: _from_epoch(s).astimezone(zone).replace(tzinfo=None) >= wall))


def scheduled_profile(profiles: ProfilesConfig, instant: datetime, zone: tzinfo) -> Optional[str]:
    """The profile the schedule gives at ``instant``: an entry's, else ``default`` (None: base)."""
    wall = schedule_wall(instant, zone)
    minute = wall.weekday() * MINUTES_PER_DAY + wall.hour * 60 + wall.minute
    for entry in profiles.schedule:
        if any(start <= minute < end for start, end in entry.week_intervals()):
            return entry.profile
    return profiles.default


def _entry_walls(entry: ScheduleEntryConfig, day: date) -> List[datetime]:
    if day.strftime("%a").lower() not in entry.days:
        return []
    start, end = minute_of_day(entry.start), minute_of_day(entry.end)
    begin = datetime.combine(day, time()) + timedelta(minutes=start)
    length = end - start if end > start else end + MINUTES_PER_DAY - start
    return [begin, begin + timedelta(minutes=length)]


def _candidates(schedule: Sequence[ScheduleEntryConfig], now: datetime, zone: tzinfo) -> List[datetime]:
    today = now.astimezone(zone).date()
    walls = {wall for offset in range(-1, LOOKAHEAD_DAYS + 1) for entry in schedule
             for wall in _entry_walls(entry, today + timedelta(days=offset))}
    return sorted(moment for moment in {instant_of_wall(wall, zone) for wall in walls} if moment > now)


def next_boundary(profiles: ProfilesConfig, now: datetime, zone: tzinfo) -> Optional[Tuple[datetime, Optional[str]]]:
    """(instant, profile): the first moment after ``now`` the schedule changes profile; None if never."""
    current = scheduled_profile(profiles, now, zone)
    for moment in _candidates(profiles.schedule, now, zone):
        profile = scheduled_profile(profiles, moment, zone)
        if profile != current:
            return moment, profile
    return None


def held_until(profiles: ProfilesConfig) -> Optional[datetime]:
    return datetime.fromisoformat(profiles.hold_until) if profiles.hold_until else None


def profile_state(profiles: ProfilesConfig, now: datetime, zone: tzinfo) -> ProfileState:
    """What is in force at ``now`` (aware) given the schedule and the last switch written."""
    boundary = next_boundary(profiles, now, zone)
    moment, after = boundary if boundary is not None else (None, None)
    hold = held_until(profiles)
    if hold is not None and now < hold:
        return ProfileState(profiles.active, "manual", hold, moment, after)
    if boundary is not None:
        return ProfileState(scheduled_profile(profiles, now, zone), "schedule", None, moment, after)
    if profiles.active is not None:
        return ProfileState(profiles.active, "switched", None, None, None)
    return ProfileState(profiles.default, "default", None, None, None)


@dataclass(frozen=True)
class ProfileReport:
    """The profile in force, for status, ``GET /api/v1/profile`` and the retained ``R/profile``."""

    active: Optional[str]  # null: the base configuration
    source: str  # manual (held until hold_until), schedule, switched (no schedule), default
    hold_until: Optional[str]  # ISO 8601 in the schedule's time zone
    next_boundary: Optional[str]  # ISO 8601 in the schedule's time zone; null: the schedule never switches
    next_profile: Optional[str]
    timezone: str
    profiles: List[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"active": self.active, "source": self.source, "hold_until": self.hold_until,
                "next_boundary": self.next_boundary, "next_profile": self.next_profile,
                "timezone": self.timezone, "profiles": list(self.profiles)}


def iso_in_zone(moment: Optional[datetime], zone) -> Optional[str]:
    return moment.astimezone(zone).isoformat() if moment is not None else None


def report_of(profiles: ProfilesConfig, now: datetime) -> ProfileReport:
    """The report of ``profiles`` at ``now``: what the file says is active, and what comes next."""
    zone = schedule_zone(profiles)
    state = profile_state(profiles, now, zone)
    # What runs is profiles.active (the file's); ``state`` may differ for the instant before the thread writes it.
    source = state.source if state.active == profiles.active else "switched"
    return ProfileReport(profiles.active, source, iso_in_zone(state.hold_until, zone),
                         iso_in_zone(state.next_boundary, zone), state.next_profile, str(zone), profiles.names())


__all__ = ["ProfileReport", "ProfileState", "instant_of_wall", "iso_in_zone", "next_boundary", "profile_state",
           "report_of", "schedule_wall", "schedule_zone", "scheduled_profile"]
