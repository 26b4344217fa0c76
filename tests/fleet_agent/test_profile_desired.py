"""The fleet switches an appliance's profile with a signed desired configuration
(``{"profiles": {"active": ...}}``): applied through the one change path, then held until the next
scheduled boundary like a manual switch; the profiles themselves stay the owner's."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from edge_app.config.file import load_config, parse_config, save_config
from edge_app.config_change.profile_switch import ProfileSwitch
from edge_app.fleet_agent.agent import FleetAgent
from edge_app.fleet_agent.desired.versions import DesiredVersionStore, state_path_for
from tests.api.in_memory_service import InMemoryService, saving_change_path
from tests.fleet_agent.test_agent import KEY, desired

NOON_WEDNESDAY = datetime(2026, 6, 3, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def setup(tmp_path, model_path):
    config_path = tmp_path / "config.yaml"
    save_config(parse_config({
        "device_id": "dev", "cameras": [{"id": "cam", "source": "test://bars"}],
        "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
        "fleet": {"remote_config": True, "desired_key": KEY},
        "profiles": {"timezone": "UTC", "default": "home",
                     "definitions": [{"name": "home"}, {"name": "away", "detect": {"cam": False}}],
                     "schedule": [{"profile": "away", "days": ["mon", "tue", "wed", "thu", "fri"],
                                   "start": "08:00", "end": "18:00"}]},
    }), config_path)
    service = InMemoryService(load_config(config_path), config_path)
    changes = saving_change_path(service)
    reports = []
    agent = FleetAgent(changes, DesiredVersionStore(state_path_for(config_path)), reports.append)
    switch = ProfileSwitch(changes, lambda report: None, clock=lambda: NOON_WEDNESDAY)
    switch.follow_schedule()  # as the running appliance's thread does first
    return config_path, agent, switch, reports


def test_the_fleet_switches_the_profile_and_it_is_held_until_the_boundary(setup):
    config_path, agent, switch, reports = setup
    assert load_config(config_path).profiles.active == "away"
    assert agent.handle(desired(1, {"profiles": {"active": "home"}})).status == "applied"
    switch.follow_schedule()
    saved = load_config(config_path).profiles
    assert (saved.active, saved.hold_until) == ("home", "2026-06-03T18:00:00+00:00")


@pytest.mark.parametrize("patch, loc", [
    ({"profiles": {"active": "party"}}, "profiles.active"),
    ({"profiles": {"schedule": []}}, "profiles.schedule.0.profile"),
], ids=["unknown profile", "the schedule"])
def test_the_fleet_may_not_switch_to_nothing_nor_change_the_schedule(setup, patch, loc):
    config_path, agent, _, reports = setup
    report = agent.handle(desired(1, patch))
    assert report.status == "rejected" and reports[-1]["errors"][0]["loc"] == loc
    assert load_config(config_path).profiles.active == "away"
