"""The fleet's page, status and the API protections it shares with the appliance."""
from __future__ import annotations

from types import SimpleNamespace

import paho.mqtt.client as mqtt
import pytest
import requests
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.http_server.static_pages import SHARED_STATIC_DIR
from edge_app.api.dashboard import STATIC_DIR as DASHBOARD_STATIC_DIR
from edge_app.fleet_service.app import STATIC_DIR as FLEET_STATIC_DIR
from edge_app.fleet_service.app import create_fleet_app
from edge_app.fleet_service.config import FleetConfig
from testkit.waiting import wait_for

TOKEN = "fleet-token-0123456789abcdef"


def test_the_fleet_page_and_its_files_come_from_the_service(fleet_factory):
    fleet = fleet_factory()
    page = fleet.get("/")
    assert page.status_code == 200
    assert "edge-app fleet" in page.text
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    for asset, kind in (("static/fleet.js", "javascript"), ("static/fleet.css", "css"),
                        ("static/shared/page.js", "javascript"), ("static/shared/page.css", "css")):
        response = fleet.get("/" + asset)
        assert response.status_code == 200 and kind in response.headers["Content-Type"]
        assert asset in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # nothing from elsewhere


def test_the_fleet_page_and_the_dashboard_share_one_copy_of_their_helpers():
    config = FleetConfig()
    fleet = create_fleet_app(SimpleNamespace(config=config, current_config=lambda: config)).test_client()
    for name in ("page.js", "page.css"):
        assert fleet.get(f"/static/shared/{name}").data == (SHARED_STATIC_DIR / name).read_bytes()
    shared = (SHARED_STATIC_DIR / "page.js").read_text()
    for helper in ("function apiClient(", "function el(", "function setLink(", "class Unauthorized"):
        assert helper in shared
        for page in (FLEET_STATIC_DIR / "fleet.js", DASHBOARD_STATIC_DIR / "dashboard.js"):
            assert helper not in page.read_text(), f"{page.name} has its own copy of {helper}"
    for rule in (":root {", "button {", ".pill {", "th, td {"):
        assert f"\n{rule}" in (SHARED_STATIC_DIR / "page.css").read_text()
        for page in (FLEET_STATIC_DIR / "fleet.css", DASHBOARD_STATIC_DIR / "dashboard.css"):
            assert f"\n{rule}" not in page.read_text(), f"{page.name} has its own copy of {rule}"


def test_status_counts_devices_and_messages(fleet_factory, sim_devices):
    fleet = fleet_factory()
    sim_devices(fleet.prefix, "edge-a").stats()
    sim_devices(fleet.prefix, "edge-b").stop()
    status = wait_for(lambda: (lambda s: s if s["devices"] == {"offline": 1, "online": 1} else None)(
        fleet.get("/api/v1/status").json()), 10, "one online, one offline")
    assert status["database"] in ("sqlite", "postgresql")
    assert status["mqtt"]["connected"] is True
    assert status["mqtt"]["written"] >= 4 and status["mqtt"]["backlog"] == 0


@pytest.mark.parametrize("method, path, headers, status", [
    ("GET", "/api/v1/devices", {}, 401),
    ("GET", "/api/v1/devices", {"Authorization": "Bearer wrong-token-0123456789"}, 401),
    ("GET", "/api/v1/devices", {"Authorization": f"Bearer {TOKEN}"}, 200),
    ("PATCH", "/api/v1/fleet/config", {}, 401),
    ("GET", "/healthz", {}, 200),
    ("GET", "/", {}, 200),
    ("GET", "/api/v1/devices", {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}, 400),
    ("DELETE", "/api/v1/devices", {"Authorization": f"Bearer {TOKEN}"}, 405),
    ("GET", "/api/v1/nothing", {"Authorization": f"Bearer {TOKEN}"}, 404),
])
def test_token_host_check_and_json_errors_as_on_the_appliance(fleet_factory, method, path, headers, status):
    fleet = fleet_factory(api={"token": TOKEN})
    response = requests.request(method, fleet.url + path, headers=headers, timeout=10)
    assert response.status_code == status
    if status >= 400:
        assert "error" in response.json()


def test_a_body_above_the_limit_is_refused_before_it_is_read(fleet_factory):
    fleet = fleet_factory(api={"max_body_bytes": 1024})
    response = fleet.patch("/api/v1/fleet/config", {"devices": "all", "patch": {"x": "y" * 4000}})
    assert response.status_code == 413
    assert "api.max_body_bytes" in response.json()["error"]


@pytest.mark.parametrize("path, body", [
    ("/api/v1/devices/a+b/config", {"model": {"conf_threshold": 0.3}}),       # MQTT wildcard
    ("/api/v1/devices/%23/config", {"model": {"conf_threshold": 0.3}}),       # "#": every topic
    ("/api/v1/devices/" + "d" * 65 + "/config", {"model": {"conf_threshold": 0.3}}),
    ("/api/v1/fleet/config", {"devices": ["#"], "patch": {"model": {"conf_threshold": 0.3}}}),
    ("/api/v1/fleet/config", {"devices": ["edge-a/config"], "patch": {"model": {"conf_threshold": 0.3}}}),
    ("/api/v1/fleet/config", {"devices": "everyone", "patch": {"model": {"conf_threshold": 0.3}}}),
])
def test_a_device_id_that_would_leave_its_topic_is_refused_and_nothing_rolls_out(fleet_factory, path, body):
    """A hostile client must not be able to aim a desired configuration at a wildcard or at
    another device's topics by way of the device id."""
    fleet = fleet_factory()
    response = fleet.patch(path, body)
    assert response.status_code in (400, 404) and "error" in response.json()
    assert fleet.get("/api/v1/rollouts").json()["rollouts"] == []


def test_devices_come_in_pages_that_follow_one_another(fleet_factory, mosquitto_broker):
    fleet = fleet_factory()
    client = mqtt.Client(CallbackAPIVersion.VERSION2)
    client.connect(mosquitto_broker.host, mosquitto_broker.port)
    client.loop_start()
    for i in range(25):
        client.publish(f"{fleet.prefix}/edge-{i:02d}/status", b'{"state": "online"}', qos=1).wait_for_publish(5)
    client.disconnect()
    client.loop_stop()
    wait_for(lambda: fleet.get("/api/v1/devices").json()["total"] == 25, 10, "25 devices")
    first = fleet.get("/api/v1/devices?limit=10").json()
    assert [d["device_id"] for d in first["devices"]] == [f"edge-{i:02d}" for i in range(10)]
    assert first["total"] == 25 and first["next"] == "edge-09"
    seen, after = [], None
    while True:
        page = fleet.get("/api/v1/devices?limit=10" + (f"&after={after}" if after else "")).json()
        seen += [d["device_id"] for d in page["devices"]]
        after = page["next"]
        if after is None:
            break
    assert seen == [f"edge-{i:02d}" for i in range(25)]
    assert fleet.get("/api/v1/devices?state=offline&limit=5").json() == {"devices": [], "total": 0, "next": None}


@pytest.mark.parametrize("query, word", [
    ("?limit=0", "limit"), ("?limit=10001", "limit"), ("?limit=x", "limit"), ("?after=a/b", "device id"),
])
def test_bad_device_pages_answer_400(fleet_factory, query, word):
    fleet = fleet_factory()
    response = fleet.get("/api/v1/devices" + query)
    assert response.status_code == 400
    assert word in response.json()["error"]
