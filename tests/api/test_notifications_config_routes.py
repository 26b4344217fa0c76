"""notifications through /api/v1/config: secrets masked, a round trip keeps them, and no write
through the API changes the section (the attack: point a target, with its secret, elsewhere)."""
import pytest

from edge_app.config.file import load_config

SECRET = "hook-secret-0123456789abcdef"
TOKEN = "tk_ntfy_0123456789"
NOTIFICATIONS = {"base_url": "https://box.lan:8080", "targets": [
    {"name": "hook", "type": "webhook", "url": "https://hooks.example/edge", "secret": SECRET},
    {"name": "phone", "type": "ntfy", "url": "https://ntfy.example/doorbell", "token": TOKEN},
]}


@pytest.fixture
def api(make_api):
    return make_api({"notifications": NOTIFICATIONS})


def test_get_masks_target_secrets_and_a_put_of_that_view_keeps_them(api):
    response = api.get("/api/v1/config")
    assert SECRET not in response.text and TOKEN not in response.text
    config = response.json()
    assert [t.get("secret") or t.get("token") for t in config["notifications"]["targets"]] == ["***", "***"]
    config["snapshots"]["jpeg_quality"] = 70
    assert api.request("PUT", "/api/v1/config", json=config).status_code == 200
    saved = load_config(api.config_path)
    assert saved.snapshots.jpeg_quality == 70
    assert (saved.notifications.targets[0].secret, saved.notifications.targets[1].token) == (SECRET, TOKEN)


@pytest.mark.parametrize("patch", [
    {"notifications": {"targets": [{**NOTIFICATIONS["targets"][0], "url": "https://attacker.example/x", "secret": "***"}]}},
    {"notifications": {"base_url": "https://attacker.example"}},
    {"notifications": None},
], ids=["masked secret to a new url", "links elsewhere", "section removed"])
def test_patch_of_notifications_is_refused_naming_the_section(api, patch):
    response = api.request("PATCH", "/api/v1/config", json=patch,
                           headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 400, response.text
    problems = response.json()["details"]
    assert any(p["loc"] == "notifications" and "configuration file" in p["msg"] for p in problems), problems
    assert api.changes.current().notifications.targets[0].url == "https://hooks.example/edge"
