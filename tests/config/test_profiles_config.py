"""The profiles section: every mistake is an error naming its key, and the effective configuration
of a profile switches what it says and nothing else (docs/profiles.md)."""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict

import pytest

from edge_app.config.file import ConfigError, parse_config
from edge_app.config.profile_overrides import effective_config

TRIANGLE = [[0, 0], [1, 0], [1, 1]]
BASE: Dict[str, Any] = {
    "model": {"path": "model.onnx"},
    "cameras": [
        {"id": "front", "source": "test://", "zones": [{"name": "porch", "polygon": TRIANGLE},
                                                       {"name": "drive", "polygon": TRIANGLE}]},
        {"id": "back", "source": "test://", "record": {"pre_s": 3}},
    ],
    "review": {"alerts": {"labels": ["person"]}},
    "notifications": {"targets": [{"name": "phone", "type": "ntfy", "url": "https://ntfy.example/t"}]},
    "profiles": {
        "timezone": "Europe/Paris", "default": "home",
        "definitions": [
            {"name": "home", "detect": {"front": False}},
            {"name": "away", "zones": {"porch": False}, "alerts": {"labels": ["person", "car"], "zones": ["drive"]},
             "record": "events_and_continuous", "quiet_hours": {"start": "23:00", "end": "06:00"}},
        ],
        "schedule": [{"profile": "away", "days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00", "end": "18:00"}],
    },
}


def _with(change: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    data = copy.deepcopy(BASE)
    change(data)
    return data


def _profiles(data: Dict[str, Any]) -> Dict[str, Any]:
    return data["profiles"]


@pytest.mark.parametrize("change, loc, words", [
    (lambda d: _profiles(d)["schedule"].append({"profile": "home", "days": ["wed"], "start": "17:00", "end": "19:00"}),
     "profiles.schedule.1", "overlaps profiles.schedule.0 from wed 17:00"),
    (lambda d: _profiles(d)["schedule"].append({"profile": "home", "days": ["sun"], "start": "22:00", "end": "08:30"}),
     "profiles.schedule.1", "overlaps profiles.schedule.0 from mon 08:00"),  # over midnight into Monday
    (lambda d: _profiles(d)["schedule"].append({"profile": "away", "days": ["fri"], "start": "09:00", "end": "10:00"}),
     "profiles.schedule.1", "overlaps"),  # the same profile twice is still an overlap
    (lambda d: _profiles(d)["schedule"].append({"profile": "party", "days": ["sat"], "start": "09:00", "end": "10:00"}),
     "profiles.schedule.1.profile", "there is no profile 'party'"),
    (lambda d: _profiles(d).update(default="party"), "profiles.default", "there is no profile 'party'"),
    (lambda d: _profiles(d).update(active="party"), "profiles.active", "there is no profile 'party'"),
    (lambda d: _profiles(d)["definitions"][0]["detect"].update(garage=True), "profiles.definitions.0.detect.garage",
     "there is no camera 'garage'"),
    (lambda d: _profiles(d)["definitions"][1]["zones"].update(pool=True), "profiles.definitions.1.zones.pool",
     "no camera has a zone named 'pool'"),
    (lambda d: _profiles(d)["definitions"][1]["alerts"].update(zones=["pool"]), "profiles.definitions.1.alerts.zones.0",
     "no camera has a zone named 'pool'"),
    (lambda d: _profiles(d)["definitions"].append({"name": "home"}), "profiles.definitions.2.name", "used twice"),
    (lambda d: _profiles(d).update(timezone="Mars/Olympus"), "profiles.timezone", "not an IANA time zone"),
    (lambda d: _profiles(d).update(timezone="../../etc/passwd"), "profiles.timezone", "not an IANA time zone"),
    (lambda d: _profiles(d)["schedule"][0].update(start="25:00"), "profiles.schedule.0.start", "HH:MM"),
    (lambda d: _profiles(d)["schedule"][0].update(days=["mon", "mon"]), "profiles.schedule.0.days", "once"),
    (lambda d: _profiles(d)["schedule"][0].update(days=["monday"]), "profiles.schedule.0.days.0", ""),
    (lambda d: _profiles(d)["definitions"][1].update(record="sometimes"), "profiles.definitions.1.record", ""),
    (lambda d: _profiles(d).update(hold_until="tomorrow"), "profiles.hold_until", "ISO 8601"),
    (lambda d: _profiles(d).update(hold_until="2026-06-03T17:00:00"), "profiles.hold_until", "offset"),
    (lambda d: _profiles(d)["definitions"][0].update(color="red"), "profiles.definitions.0.color", ""),
], ids=lambda value: value if isinstance(value, str) and value.startswith("profiles") else None)
def test_bad_profiles_are_errors_naming_the_key(change, loc, words):
    with pytest.raises(ConfigError) as caught:
        parse_config(_with(change))
    problem = caught.value.problems[0]
    assert problem.loc == loc and words in problem.msg, caught.value.problems


def test_a_good_section_parses_and_touching_days_do_not_overlap():
    data = _with(lambda d: _profiles(d)["schedule"].append(
        {"profile": "home", "days": ["mon"], "start": "18:00", "end": "08:00"}))  # ends where Tuesday's begins
    assert parse_config(data).profiles.names() == ["home", "away"]


def test_no_active_profile_runs_the_base_configuration():
    config = parse_config(BASE)
    assert effective_config(config) == config


def test_the_effective_configuration_of_a_profile():
    config = parse_config(_with(lambda d: _profiles(d).update(active="away")))
    away = effective_config(config)
    front, back = away.cameras
    assert [zone.name for zone in front.zones] == ["drive"]  # porch off
    assert front.detect and back.detect
    assert (back.record.enabled, back.record.continuous, back.record.pre_s) == (True, True, 3)  # the rest kept
    assert away.review.alerts.labels == ["person", "car"]
    assert away.notifications.targets[0].quiet_hours.start == "23:00"
    assert away.profiles == config.profiles  # the section itself is the file's
    home = effective_config(config, "home")
    assert [cam.detect for cam in home.cameras] == [False, True]
    assert [zone.name for zone in home.cameras[0].zones] == ["porch", "drive"]
    assert home.review == config.review and home.notifications == config.notifications
