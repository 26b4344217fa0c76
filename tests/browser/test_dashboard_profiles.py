"""The profile selector in the dashboard's header, in a real browser against ``edge-app run``:
it shows the active profile and the next scheduled boundary, and picking a profile switches it on
the appliance (saved, held until that boundary), as REST reports."""
from __future__ import annotations

import pytest
import requests

from tests.browser.conftest import TOKEN
from tests.browser.dashboard import Dashboard
from testkit.appliance import ApplianceProcess
from testkit.net import free_port

EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


@pytest.fixture(scope="module")
def appliance(tmp_path_factory, model_path):
    workdir = tmp_path_factory.mktemp("appliance-profiles")
    config = {
        "device_id": "profiles",
        "cameras": [{"id": "yard", "source": "test://bars", "fps_limit": 1}],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"enabled": False},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
        "events": {"dir": str(workdir / "events")},
        "profiles": {
            "timezone": "UTC", "default": "home",
            "definitions": [{"name": "home"}, {"name": "away", "detect": {"yard": False}}, {"name": "night"}],
            # two boundaries a day: there is always a next one within 12 hours
            "schedule": [{"profile": "night", "days": EVERY_DAY, "start": "00:00", "end": "12:00"}],
        },
    }
    with ApplianceProcess(config, workdir) as app:
        yield app


def _profile(appliance) -> dict:
    response = requests.get(appliance.base_url + "/api/v1/profile", headers={"Authorization": f"Bearer {TOKEN}"},
                            timeout=5)
    response.raise_for_status()
    return response.json()


def test_the_header_shows_the_profile_and_switches_it(dashboard: Dashboard, appliance):
    scheduled = _profile(appliance)["active"]
    assert scheduled in ("home", "night")
    dashboard.wait(lambda _d: dashboard.find("#profile-select").get_attribute("value") == scheduled,
                   "the selector to show the scheduled profile")
    assert "schedule" in dashboard.text("#profile-meta")
    dashboard.select("#profile-select", "away")
    dashboard.wait(lambda _d: _profile(appliance)["active"] == "away", "the appliance to switch to away")
    report = _profile(appliance)
    assert report["source"] == "manual" and report["hold_until"] == report["next_boundary"]
    dashboard.wait(lambda _d: "held until" in dashboard.text("#profile-meta"), "the header to say the switch holds")
    dashboard.screenshot("profile-selector.png", "header")


def _camera(appliance, camera_id: str) -> dict:
    response = requests.get(appliance.base_url + f"/api/v1/cameras/{camera_id}",
                            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
    response.raise_for_status()
    return response.json()


def test_a_profile_that_switches_detection_off_shows_on_the_camera(dashboard: Dashboard, appliance):
    """The stored configuration still says detect: true; the profile in force says otherwise, and
    the camera's report (detect) and its live tile follow the profile, not the stored switch."""
    dashboard.select("#profile-select", "away")
    dashboard.wait(lambda _d: _profile(appliance)["active"] == "away", "the appliance to switch to away")
    assert _camera(appliance, "yard")["detect"] is False
    dashboard.go("live")
    tile = '#live-grid .tile[data-camera="yard"]'
    dashboard.wait(lambda _d: "detecting off" in dashboard.text(tile), "the tile to say it does not detect", 30)
    dashboard.select("#profile-select", "home")
    dashboard.wait(lambda _d: _profile(appliance)["active"] == "home", "the appliance to switch to home")
    assert _camera(appliance, "yard")["detect"] is True
    dashboard.wait(lambda _d: "detecting off" not in dashboard.text(tile), "the tile to detect again", 30)
