"""The fleet page in a real browser (headless Chromium), against a fleet service on a real broker.

Simulated appliances report to the fleet service; the page must show each device with its
online/offline state and cameras, a rollout with its per-status counts and the error of the
device that rejected it, and start a rollout from its form. After every test the console must
hold no error the test did not provoke (conftest.py).
"""
from __future__ import annotations

import json
import time

import paho.mqtt.publish as publish
import pytest
import requests
from selenium.webdriver.common.by import By

from tests.browser.conftest import screenshots_dir
from tests.support.fleet import start_fleet
from tests.support.fleet_devices import SimDevice
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

TOKEN = "fleet-browser-token-0123456789"


@pytest.fixture
def fleet_site(mosquitto_broker, tmp_path, driver):
    """A fleet with a token and three appliances: two online (one rejects model changes), one stopped."""
    fleet = start_fleet(mosquitto_broker, f"sqlite:///{tmp_path / 'fleet.db'}", api={"token": TOKEN})
    devices = [SimDevice(mosquitto_broker.host, mosquitto_broker.port, fleet.prefix, "edge-east", cameras=["gate", "yard"]),
               SimDevice(mosquitto_broker.host, mosquitto_broker.port, fleet.prefix, "edge-west", reject_keys=["model"]),
               SimDevice(mosquitto_broker.host, mosquitto_broker.port, fleet.prefix, "edge-north")]
    for device in devices:
        device.start()
    devices[2].stop()
    devices[0].event("new", "ev-1", camera="gate", label="person", zones=["door"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    wait_for(lambda: len(requests.get(fleet.url + "/api/v1/devices?state=online", headers=auth, timeout=5)
                         .json()["devices"]) == 2, 10, "two devices online")
    yield fleet, auth
    driver.get("about:blank")  # the page stops polling before its server goes away
    for device in devices[:2]:
        device.kill()
    fleet.stop()


def _open(driver, fleet, console) -> None:
    # The page's first request goes without a token and is answered 401: that is how it learns it needs one.
    console.allow(r"401")
    driver.get(fleet.url + "/")
    form = wait_for(lambda: driver.find_element(By.ID, "token-input").is_displayed(), 10, "the token form")
    assert form
    driver.find_element(By.ID, "token-input").send_keys(TOKEN)
    driver.find_element(By.CSS_SELECTOR, "#login-form button").click()
    wait_for(lambda: driver.find_element(By.ID, "main").is_displayed(), 10, "the fleet page after the token")


# The page re-renders its tables every 2 s; each read takes one consistent copy in the browser.
DEVICE_ROWS_JS = """return Array.from(document.querySelectorAll('#devices tr[data-device]')).map((tr) => ({
  device: tr.dataset.device, state: tr.dataset.state,
  cameras: Array.from(tr.querySelectorAll('.cams .pill')).map((p) => p.textContent)}));"""
ROW_CELLS_JS = """const tr = document.querySelector(arguments[0]);
return tr ? Array.from(tr.querySelectorAll('td')).map((td) => td.textContent) : null;"""
EVENT_CELLS_JS = """return Array.from(document.querySelectorAll('#events tr')).map((tr) =>
  Array.from(tr.querySelectorAll('td')).map((td) => td.textContent));"""


def _devices(driver) -> dict:
    return {row["device"]: row for row in driver.execute_script(DEVICE_ROWS_JS)}


def test_the_page_shows_every_device_with_its_state_and_cameras(driver, console, fleet_site):
    fleet, _ = fleet_site
    _open(driver, fleet, console)
    rows = wait_for(lambda: (lambda r: r if len(r) == 3 else None)(_devices(driver)), 10, "three device rows")
    assert {d: r["state"] for d, r in rows.items()} == {"edge-east": "online", "edge-north": "offline", "edge-west": "online"}
    assert rows["edge-east"]["cameras"] == ["gate", "yard"]
    assert driver.find_element(By.ID, "count-online").text == "2"
    assert driver.find_element(By.ID, "count-offline").text == "1"
    events = wait_for(lambda: [r for r in driver.execute_script(EVENT_CELLS_JS) if "edge-east" in r], 10, "the event row")
    assert events[0][2:4] == ["gate", "person"]
    # A device coming and going shows on the next refresh, without reloading the page.
    mqtt = fleet.service.config.mqtt
    south = SimDevice(mqtt.host, mqtt.port, fleet.prefix, "edge-south").start()
    wait_for(lambda: _devices(driver).get("edge-south", {}).get("state") == "online", 10, "edge-south online on the page")
    south.kill()
    wait_for(lambda: _devices(driver).get("edge-south", {}).get("state") == "offline", 10, "edge-south offline on the page")


def test_a_rollout_shows_its_counts_and_the_rejecting_devices_error(driver, console, fleet_site):
    fleet, auth = fleet_site
    _open(driver, fleet, console)
    driver.find_element(By.ID, "rollout-devices").clear()
    driver.find_element(By.ID, "rollout-devices").send_keys("all")
    driver.find_element(By.ID, "rollout-patch").send_keys(json.dumps({"model": {"conf_threshold": 0.4}}))
    driver.find_element(By.CSS_SELECTOR, "#rollout-form button").click()
    wait_for(lambda: "Started for 3 device(s)" in driver.find_element(By.ID, "rollout-result").text, 10, "the form's answer")
    rollouts = requests.get(fleet.url + "/api/v1/rollouts", headers=auth, timeout=5).json()["rollouts"]
    assert [r["patch"] for r in rollouts] == [{"model": {"conf_threshold": 0.4}}]

    def row_text():
        cells = driver.execute_script(ROW_CELLS_JS, f"#rollouts tr[data-rollout='{rollouts[0]['rollout_id']}']")
        return cells if cells and "edge-west" in cells[-1] else None

    cells = wait_for(row_text, 15, "the rollout's counts and error on the page")
    if screenshots_dir() is not None:
        driver.save_screenshot(str(screenshots_dir() / "fleet.png"))
    # applied (edge-east), pending (edge-north is offline), rejected (edge-west), then the error
    assert cells[3:6] == ["1", "1", "1"]
    assert "edge-west" in cells[6] and "model" in cells[6]


def test_a_patch_that_is_not_json_is_refused_on_the_page(driver, console, fleet_site):
    fleet, auth = fleet_site
    _open(driver, fleet, console)
    driver.find_element(By.ID, "rollout-patch").send_keys("{not json")
    driver.find_element(By.CSS_SELECTOR, "#rollout-form button").click()
    wait_for(lambda: "not JSON" in driver.find_element(By.ID, "rollout-result").text, 5, "the page's complaint")
    time.sleep(0.5)
    assert requests.get(fleet.url + "/api/v1/rollouts", headers=auth, timeout=5).json()["rollouts"] == []


def test_devices_filter_and_sort_by_their_health(driver, console, fleet_site):
    fleet, _ = fleet_site
    mqtt = fleet.service.config.mqtt
    hot = SimDevice(mqtt.host, mqtt.port, fleet.prefix, "edge-hot").start()
    hot.publish("health", {"ts": time.time(), "summary": {"temperature_c": 99.4},
                           "problems": [{"kind": "hot", "subject": "board", "message": "tj-therm at 99.4 °C"},
                                        {"kind": "throttling", "subject": "soc", "message": "throttled"}]}, retain=True)
    try:
        _open(driver, fleet, console)
        wait_for(lambda: "hot" in _problems(driver).get("edge-hot", ""), 10, "edge-hot with its problems")
        driver.find_element(By.CSS_SELECTOR, "#problem-filter option[value='hot']").click()
        wait_for(lambda: list(_problems(driver)) == ["edge-hot"], 10, "only the hot device")
        driver.find_element(By.CSS_SELECTOR, "#problem-filter option[value='']").click()
        driver.find_element(By.CSS_SELECTOR, "#device-sort option[value='problems']").click()
        wait_for(lambda: list(_problems(driver))[:2] == ["edge-north", "edge-hot"], 10, "offline first, then the hot one")
        cells = driver.execute_script(ROW_CELLS_JS, "#devices tr[data-device='edge-hot']")
        assert "99.4 °C" in cells[-1]
    finally:
        hot.kill()


def _problems(driver) -> dict:
    return {tr["device"]: tr["problems"] for tr in driver.execute_script(
        "return Array.from(document.querySelectorAll('#devices tr[data-device]')).map((tr) => "
        "({device: tr.dataset.device, problems: tr.dataset.problems}));")}


def test_a_model_rollout_shows_each_devices_model_state(driver, console, fleet_site):
    fleet, auth = fleet_site
    upload = requests.put(fleet.url + "/api/v1/models/gate/3", data=b"onnx stand-in bytes", headers=auth, timeout=5)
    assert upload.status_code == 201, upload.text
    started = requests.post(fleet.url + "/api/v1/models/gate/3/rollout", json={"devices": ["edge-east"]},
                            headers=auth, timeout=5)
    assert started.status_code == 202, started.text
    mqtt = fleet.service.config.mqtt
    # What the appliance reports about its models, in its retained status (docs/fleet.md).
    status = {"state": "online", "version": "sim", "models_state": {
        "gate": {"version": "3", "state": "failed", "progress": None, "reason": "sha256 mismatch"}}}
    publish.single(f"{fleet.prefix}/edge-east/status", json.dumps(status), qos=1, retain=True,
                   hostname=mqtt.host, port=mqtt.port)
    _open(driver, fleet, console)
    wait_for(lambda: "gate v3 failed" in (driver.execute_script(ROW_CELLS_JS, "#devices tr[data-device='edge-east']")
                                          or [""] * 8)[6], 10, "the model state in the device row")

    def rollout_cells():
        cells = driver.execute_script(ROW_CELLS_JS, f"#rollouts tr[data-rollout='{started.json()['rollout_id']}']")
        return cells if cells and "sha256 mismatch" in cells[-1] else None

    cells = wait_for(rollout_cells, 15, "the model rollout's states on the page")
    assert "gate v3: 1 failed" in cells[-1]
