"""Which profile the schedule gives at a moment and when it changes next: pure, the time passed in,
in the profiles' time zone, across daylight saving changes (docs/profiles.md)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict, List, Optional
from zoneinfo import ZoneInfo

import pytest

from edge_app.config.profile_schedule import (instant_of_wall, next_boundary, profile_state, schedule_wall,
                                              scheduled_profile)
from edge_app.config.schema_profiles import ProfilesConfig

NEW_YORK = ZoneInfo("America/New_York")
PARIS = ZoneInfo("Europe/Paris")
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"]


def _profiles(schedule: List[Dict[str, Any]], default: Optional[str] = "home", **more: Any) -> ProfilesConfig:
    return ProfilesConfig.model_validate({
        "default": default, "definitions": [{"name": n} for n in ("home", "away", "night")],
        "schedule": schedule, **more})


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(timezone.utc)


OFFICE = [{"profile": "away", "days": WEEKDAYS, "start": "08:00", "end": "17:00"}]
NIGHTS = [{"profile": "night", "days": ["fri", "sat"], "start": "22:00", "end": "06:00"}]
# 2026-03-08 is the night New York springs forward (02:00 EST -> 03:00 EDT); 2026-11-01 it falls back.
DST_NIGHT = [{"profile": "night", "days": ["sun"], "start": "01:00", "end": "02:30"}]


@pytest.mark.parametrize("schedule, zone, at, want", [
    (OFFICE, PARIS, "2026-06-03T07:59:59+02:00", "home"),  # Wednesday, a second before
    (OFFICE, PARIS, "2026-06-03T08:00:00+02:00", "away"),  # start included
    (OFFICE, PARIS, "2026-06-03T16:59:00+02:00", "away"),
    (OFFICE, PARIS, "2026-06-03T17:00:00+02:00", "home"),  # end excluded
    (OFFICE, PARIS, "2026-06-06T10:00:00+02:00", "home"),  # Saturday
    (OFFICE, PARIS, "2026-06-03T06:30:00+00:00", "away"),  # 08:30 in Paris, given in UTC
    (NIGHTS, PARIS, "2026-06-05T23:00:00+02:00", "night"),  # Friday night
    (NIGHTS, PARIS, "2026-06-06T05:59:00+02:00", "night"),  # past midnight, into Saturday
    (NIGHTS, PARIS, "2026-06-07T05:00:00+02:00", "night"),  # Saturday's night, into Sunday
    (NIGHTS, PARIS, "2026-06-08T01:00:00+02:00", "home"),  # Sunday night is not scheduled
    (OFFICE, PARIS, "2026-03-30T08:00:00+02:00", "away"),  # the Monday after Paris sprang forward: 08:00 is 08:00
    (OFFICE, PARIS, "2026-03-27T08:00:00+01:00", "away"),  # the Friday before
    (DST_NIGHT, NEW_YORK, "2026-03-08T06:30:00+00:00", "night"),  # 01:30 EST
    (DST_NIGHT, NEW_YORK, "2026-03-08T06:59:59+00:00", "night"),  # 01:59:59 EST, the last second before the jump
    (DST_NIGHT, NEW_YORK, "2026-03-08T07:00:00+00:00", "home"),  # 03:00 EDT: 02:30 was skipped, the period is over
    (DST_NIGHT, NEW_YORK, "2026-11-01T05:30:00+00:00", "night"),  # 01:30 EDT, the first pass
    (DST_NIGHT, NEW_YORK, "2026-11-01T06:30:00+00:00", "night"),  # 01:30 EST, the repeat
    (DST_NIGHT, NEW_YORK, "2026-11-01T07:29:00+00:00", "night"),  # 02:29 EST
    (DST_NIGHT, NEW_YORK, "2026-11-01T07:30:00+00:00", "home"),  # 02:30 EST
], ids=lambda value: value if isinstance(value, str) else None)
def test_scheduled_profile(schedule, zone, at, want):
    assert scheduled_profile(_profiles(schedule), _utc(at), zone) == want


def test_outside_the_schedule_without_a_default_is_the_base_configuration():
    assert scheduled_profile(_profiles(OFFICE, default=None), _utc("2026-06-06T10:00:00+02:00"), PARIS) is None


# A period ending in the repeated autumn hour: it ends on the first pass, and the repeat does not bring it back.
ENDS_IN_REPEAT = [{"profile": "night", "days": ["sat"], "start": "22:00", "end": "01:30"}]


@pytest.mark.parametrize("at, want", [
    ("2026-11-01T05:29:00+00:00", "night"),  # 01:29 EDT
    ("2026-11-01T05:30:00+00:00", "home"),  # 01:30 EDT: over
    ("2026-11-01T06:00:00+00:00", "home"),  # 01:00 EST: the wall clock went back, the schedule does not
    ("2026-11-01T06:45:00+00:00", "home"),  # 01:45 EST
    ("2026-11-01T07:00:00+00:00", "home"),  # 02:00 EST
])
def test_the_repeated_hour_does_not_undo_a_boundary(at, want):
    assert scheduled_profile(_profiles(ENDS_IN_REPEAT), _utc(at), NEW_YORK) == want


@pytest.mark.parametrize("schedule, zone, now, boundary, after", [
    (OFFICE, PARIS, "2026-06-03T07:00:00+02:00", "2026-06-03T08:00:00+02:00", "away"),
    (OFFICE, PARIS, "2026-06-03T08:00:00+02:00", "2026-06-03T17:00:00+02:00", "home"),
    (OFFICE, PARIS, "2026-06-05T18:00:00+02:00", "2026-06-08T08:00:00+02:00", "away"),  # Friday evening -> Monday
    (NIGHTS, PARIS, "2026-06-05T23:00:00+02:00", "2026-06-06T06:00:00+02:00", "home"),
    # Paris springs forward on Sunday 2026-03-29: Monday 08:00 is 06:00 UTC, no longer 07:00.
    (OFFICE, PARIS, "2026-03-27T18:00:00+01:00", "2026-03-30T08:00:00+02:00", "away"),
    # New York: a period ending at 02:30 on the spring-forward night ends when the clock jumps (03:00 EDT).
    (DST_NIGHT, NEW_YORK, "2026-03-08T06:30:00+00:00", "2026-03-08T07:00:00+00:00", "home"),
    # ... and in autumn at the one 02:30 there is, after the repeated hour: 2.5 hours after 01:00 EDT.
    (DST_NIGHT, NEW_YORK, "2026-11-01T05:00:00+00:00", "2026-11-01T07:30:00+00:00", "home"),
    (ENDS_IN_REPEAT, NEW_YORK, "2026-11-01T05:00:00+00:00", "2026-11-01T05:30:00+00:00", "home"),
    (ENDS_IN_REPEAT, NEW_YORK, "2026-11-01T06:00:00+00:00", "2026-11-08T03:00:00+00:00", "night"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_next_boundary(schedule, zone, now, boundary, after):
    assert next_boundary(_profiles(schedule), _utc(now), zone) == (_utc(boundary), after)


@pytest.mark.parametrize("schedule", [[], [{"profile": "home", "days": WEEKDAYS, "start": "08:00", "end": "17:00"}]],
                         ids=["no schedule", "the same profile inside and out"])
def test_a_schedule_that_never_changes_profile_has_no_boundary(schedule):
    assert next_boundary(_profiles(schedule), _utc("2026-06-03T07:00:00+02:00"), PARIS) is None


@pytest.mark.parametrize("wall, zone, instant", [
    ("2026-06-03T08:00:00", PARIS, "2026-06-03T06:00:00+00:00"),
    ("2026-03-08T02:30:00", NEW_YORK, "2026-03-08T07:00:00+00:00"),  # skipped: the jump
    ("2026-03-08T02:00:00", NEW_YORK, "2026-03-08T07:00:00+00:00"),  # skipped: the jump
    ("2026-03-08T03:00:00", NEW_YORK, "2026-03-08T07:00:00+00:00"),
    ("2026-11-01T01:30:00", NEW_YORK, "2026-11-01T05:30:00+00:00"),  # repeated: the first pass
])
def test_instant_of_wall(wall, zone, instant):
    assert instant_of_wall(datetime.fromisoformat(wall), zone) == _utc(instant)


def test_the_wall_clock_of_the_repeated_hour_stands_still():
    held = [schedule_wall(_utc(at), NEW_YORK) for at in ("2026-11-01T06:00:00+00:00", "2026-11-01T06:59:00+00:00")]
    assert all(wall.replace(microsecond=0) == datetime(2026, 11, 1, 1, 59, 59) for wall in held)
    assert schedule_wall(_utc("2026-11-01T07:00:00+00:00"), NEW_YORK) == datetime(2026, 11, 1, 2, 0)


@pytest.mark.parametrize("active, hold_until, now, want_active, want_source", [
    # A manual switch holds until its boundary, whatever the schedule says meanwhile ...
    ("night", "2026-06-03T17:00:00+02:00", "2026-06-03T09:00:00+02:00", "night", "manual"),
    ("night", "2026-06-03T17:00:00+02:00", "2026-06-03T16:59:59+02:00", "night", "manual"),
    # ... and from the boundary on the schedule has its say again.
    ("night", "2026-06-03T17:00:00+02:00", "2026-06-03T17:00:00+02:00", "home", "schedule"),
    (None, None, "2026-06-03T09:00:00+02:00", "away", "schedule"),
    ("home", None, "2026-06-03T09:00:00+02:00", "away", "schedule"),  # a restart after a boundary: the schedule's
])
def test_profile_state_with_a_manual_switch(active, hold_until, now, want_active, want_source):
    profiles = _profiles(OFFICE, active=active, hold_until=hold_until)
    state = profile_state(profiles, _utc(now), PARIS)
    assert (state.active, state.source) == (want_active, want_source)


@pytest.mark.parametrize("active, want_active, want_source", [("night", "night", "switched"), (None, "home", "default")])
def test_without_a_schedule_the_last_switch_holds(active, want_active, want_source):
    state = profile_state(_profiles([], active=active), _utc("2026-06-03T09:00:00+02:00"), PARIS)
    assert (state.active, state.source, state.next_boundary) == (want_active, want_source, None)
