"""Profile switches through the one change path: a manual switch holds until the next scheduled
boundary and the schedule takes over from there; a switch the schedule did not make (a PATCH, the
fleet) is held the same way. The clock is passed in: no test waits for a boundary."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import List

import pytest

from edge_app.config.file import ConfigFile, load_config, parse_config, save_config
from edge_app.config.schema import AppConfig
from edge_app.config_change.changes import ChangeRules, ConfigChanges, ConfigRefused, Origin
from edge_app.config_change.profile_switch import ProfileReport, ProfileSwitch
from edge_app.reporting.protocol import ApplyResult
from testkit.waiting import wait_for

WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"]
CONFIG = {
    "model": {"path": "model.onnx"},
    "cameras": [{"id": "front", "source": "test://"}],
    "profiles": {
        "timezone": "Europe/Paris", "default": "home",
        "definitions": [{"name": "home"}, {"name": "away", "detect": {"front": False}}, {"name": "night"}],
        "schedule": [{"profile": "away", "days": WEEKDAYS, "start": "08:00", "end": "17:00"}],
    },
}


class Clock:
    def __init__(self, at: str) -> None:
        self.now = datetime.fromisoformat(at)

    def __call__(self) -> datetime:
        return self.now.astimezone(timezone.utc)

    def set(self, at: str) -> None:
        self.now = datetime.fromisoformat(at)


class Box:
    """The one change path, saving to a file, and a switch on a clock the test moves."""

    def __init__(self, tmp_path: Path, at: str) -> None:
        self.path = tmp_path / "config.yaml"
        if not self.path.exists():  # a second box on the same folder is the appliance restarted
            save_config(parse_config(CONFIG), self.path)
        self.config = load_config(self.path)
        self.applied: List[AppConfig] = []
        self.published: List[ProfileReport] = []
        self.clock = Clock(at)
        self.changes = ConfigChanges(lambda: self.config, self._apply,
                                     ChangeRules(config_file=ConfigFile(self.path), runtime_check=lambda *a, **k: []))
        self.switch = ProfileSwitch(self.changes, self.published.append, clock=self.clock)

    def _apply(self, config: AppConfig) -> ApplyResult:
        self.config = config
        self.applied.append(config)
        self.switch.on_applied(config)
        return ApplyResult(config)

    def saved(self):
        profiles = load_config(self.path).profiles
        return profiles.active, profiles.hold_until


@pytest.fixture
def box(tmp_path) -> Box:
    return Box(tmp_path, "2026-06-03T09:00:00+02:00")  # a Wednesday, inside the "away" period


def test_the_schedule_switches_at_its_boundaries(box):
    box.switch.follow_schedule()
    assert box.saved() == ("away", None)
    box.clock.set("2026-06-03T16:59:59+02:00")
    box.switch.follow_schedule()
    assert len(box.applied) == 1  # nothing to do inside the period
    box.clock.set("2026-06-03T17:00:00+02:00")
    box.switch.follow_schedule()
    assert box.saved() == ("home", None)
    assert box.published[-1].active == "home" and box.published[-1].next_boundary == "2026-06-04T08:00:00+02:00"


def test_a_manual_switch_holds_until_the_next_boundary(box):
    box.switch.follow_schedule()
    report = box.switch.switch("night", Origin.API)
    assert (report.active, report.source, report.hold_until) == ("night", "manual", "2026-06-03T17:00:00+02:00")
    assert box.saved() == ("night", "2026-06-03T17:00:00+02:00")
    for at in ("2026-06-03T09:00:30+02:00", "2026-06-03T12:00:00+02:00", "2026-06-03T16:59:59+02:00"):
        box.clock.set(at)
        box.switch.follow_schedule()
        assert box.config.profiles.active == "night", f"the schedule fought the manual switch at {at}"
    box.clock.set("2026-06-03T17:00:00+02:00")  # the boundary: the schedule has its say again
    box.switch.follow_schedule()
    assert box.saved() == ("home", None)
    box.clock.set("2026-06-04T08:00:00+02:00")
    box.switch.follow_schedule()
    assert box.saved() == ("away", None)


def test_a_manual_switch_outside_the_schedule_holds_until_the_period_starts(box):
    box.clock.set("2026-06-05T18:00:00+02:00")  # Friday evening
    box.switch.follow_schedule()
    assert box.saved() == ("home", None)
    assert box.switch.switch("away").hold_until == "2026-06-08T08:00:00+02:00"  # Monday's start
    box.clock.set("2026-06-07T12:00:00+02:00")
    box.switch.follow_schedule()
    assert box.saved() == ("away", "2026-06-08T08:00:00+02:00")


def test_a_switch_made_by_a_patch_is_held_like_a_manual_one(box):
    box.switch.follow_schedule()
    assert box.saved() == ("away", None)
    box.changes.patch({"profiles": {"active": "night"}}, Origin.BROKER)  # as the fleet's R/config/desired does
    box.switch.follow_schedule()
    assert box.saved() == ("night", "2026-06-03T17:00:00+02:00")


@pytest.mark.parametrize("name", ["party", "HOME", ""])
def test_an_unknown_profile_is_refused_and_nothing_changes(box, name):
    box.switch.follow_schedule()
    with pytest.raises(ConfigRefused) as caught:
        box.switch.switch(name)
    assert caught.value.problems[0].loc == "profile" and "there is no profile" in caught.value.problems[0].msg
    assert box.saved() == ("away", None)


def test_a_restart_keeps_a_hold_and_drops_one_that_ended(tmp_path):
    Box(tmp_path, "2026-06-03T09:00:00+02:00").switch.switch("night")
    restarted = Box(tmp_path, "2026-06-03T10:00:00+02:00")
    restarted.switch.follow_schedule()
    assert restarted.saved() == ("night", "2026-06-03T17:00:00+02:00")
    after_the_boundary = Box(tmp_path, "2026-06-03T18:00:00+02:00")
    after_the_boundary.switch.follow_schedule()
    assert after_the_boundary.saved() == ("home", None)


def test_the_thread_follows_the_schedule_and_publishes(box):
    box.clock.set("2026-06-03T09:00:00+02:00")
    box.switch.start()
    try:
        wait_for(lambda: box.config.profiles.active == "away", 10, "the schedule's thread to switch")
    finally:
        box.switch.stop()
    assert box.config.profiles.active == "away" and box.published and box.published[0].profiles == ["home", "away", "night"]
