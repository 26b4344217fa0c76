"""GET/POST /api/v1/profile over real HTTP: the active profile and the next boundary, a manual
switch saved through the change path and held until that boundary, hostile bodies refused."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from edge_app.config.file import load_config
from tests.api.conftest import TOKEN

PROFILES = {"profiles": {
    "timezone": "UTC", "default": "home",
    "definitions": [{"name": "home"}, {"name": "away", "detect": {"front": False}}, {"name": "night"}],
    # every day has two boundaries, so the next is never more than 12 hours away
    "schedule": [{"profile": "night", "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                  "start": "00:00", "end": "12:00"}],
}}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(make_api):
    return make_api({**PROFILES, "api": {"token": TOKEN}})


def test_get_shows_the_profiles_and_the_next_boundary(api):
    body = api.get("/api/v1/profile", headers=AUTH).json()
    assert body["profiles"] == ["home", "away", "night"] and body["timezone"] == "UTC"
    boundary = datetime.fromisoformat(body["next_boundary"])
    assert 0 < (boundary - datetime.now(timezone.utc)).total_seconds() <= 12 * 3600
    assert body["next_profile"] in ("home", "night")


def test_post_switches_saves_and_holds_until_the_next_boundary(api):
    response = api.request("POST", "/api/v1/profile", json={"profile": "away"}, headers=AUTH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["active"], body["source"]) == ("away", "manual")
    assert body["hold_until"] == body["next_boundary"]
    saved = load_config(api.config_path).profiles
    assert (saved.active, saved.hold_until) == ("away", body["hold_until"])
    assert api.changes.current().profiles.active == "away"
    assert api.get("/api/v1/profile", headers=AUTH).json()["active"] == "away"


@pytest.mark.parametrize("kwargs, status, words", [
    ({"json": {"profile": "party"}}, 400, "there is no profile 'party'"),
    ({"json": {"profile": "away", "until": "forever"}}, 400, "until"),
    ({"json": {"profile": 7}}, 400, "profile"),
    ({"json": {"profile": "a/b"}}, 400, "profile"),
    ({"json": {"profile": "x" * 65}}, 400, "profile"),
    ({"json": ["away"]}, 400, ""),
    ({"json": {}}, 400, "profile"),
    ({"data": "away", "headers": {"Content-Type": "text/plain"}}, 415, "JSON"),
], ids=["unknown", "extra key", "number", "slash", "too long", "a list", "empty", "not JSON"])
def test_hostile_bodies_are_refused_and_nothing_changes(api, kwargs, status, words):
    headers = {**AUTH, **kwargs.pop("headers", {})}
    response = api.request("POST", "/api/v1/profile", headers=headers, **kwargs)
    assert response.status_code == status, response.text
    assert words in response.text
    assert load_config(api.config_path).profiles.active is None if api.config_path.exists() else True
    assert api.changes.current().profiles.active is None


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_routes_need_the_token_like_every_other(api, method):
    response = api.request(method, "/api/v1/profile", json={"profile": "away"})
    assert response.status_code == 401
    assert api.changes.current().profiles.active is None


def test_without_profiles_the_route_says_so(make_api):
    api = make_api()
    body = api.get("/api/v1/profile").json()
    assert (body["active"], body["profiles"], body["next_boundary"]) == (None, [], None)
    response = api.request("POST", "/api/v1/profile", json={"profile": "away"})
    assert response.status_code == 400 and "profiles: none" in response.text
