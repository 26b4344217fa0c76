"""The dashboard's sections, its live grid and its review items in a real browser.

The appliance of this module has four cameras: the walking camera of conftest.py (real RTSP,
real YOLOv8n, events on) and three cameras drawing test bars without analysis. Every section is
opened with its header link at desktop size and at a phone's 390x844; the live grid must show a
picture of every camera; a review item grouping overlapping events of the walking camera is
marked reviewed in the page and still is after a reload.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.browser.conftest import TOKEN, WALK_CAMERA, appliance_config
from tests.browser.dashboard import Dashboard
from tests.browser.test_recording_playback import wait_playing
from testkit.appliance import ApplianceProcess

pytestmark = pytest.mark.slow

BARS_CAMERAS = ["yard", "gate", "shed"]
NO_DETECT_CAMERA = "shed"
SECTIONS = {
    # section: an element that only it shows
    "live": "#live-grid-card",
    "review": "#review",
    "recordings": "#recordings",
    "zones": "#area-editor",
    "settings": "#config-card",
    "device": "#cameras",
}
SIZES = {"desktop": None, "phone": (390, 844)}
# People walk by within seconds; overlapping walkers make items of several events.
REVIEW_TIMEOUT_S = 90.0


@pytest.fixture(scope="module")
def appliance(tmp_path_factory, browser_rtsp, browser_broker, model_path):
    workdir = tmp_path_factory.mktemp("appliance4")
    (workdir / "engines").mkdir()
    (workdir / "engines" / "yolov8n.onnx").symlink_to(model_path)
    config = appliance_config(browser_rtsp.url(WALK_CAMERA), Path("engines/yolov8n.onnx"), browser_broker,
                              workdir / "events")
    # A camera that does not detect has no analysed frame: the grid shows its captured frame and
    # says that it is not detecting.
    config["cameras"] = [config["cameras"][0]] + [
        {"id": camera_id, "source": "test://bars", "fps_limit": 1, "detect": camera_id != NO_DETECT_CAMERA}
        for camera_id in BARS_CAMERAS]
    # Event clips, for the review item's inline player.
    config["record"] = {"dir": str(workdir / "recordings"), "events": {"enabled": True, "pre_s": 1, "post_s": 1}}
    # Each walk its own item (walkers of one walk overlap, so they still share one), so that the
    # keys and "Reviewed up to here" have several items to work on.
    config["review"] = {"gap_s": 1}
    with ApplianceProcess(config, workdir) as app:
        yield app


def hidden_or_shown(page: Dashboard, css: str) -> bool:
    """Whether ``css`` is displayed now (``Dashboard.find`` would open its section first)."""
    from selenium.webdriver.common.by import By

    return page.driver.find_element(By.CSS_SELECTOR, css).is_displayed()


@pytest.fixture
def sized(dashboard):
    """The dashboard; a test that emulates a phone leaves the window as it was."""
    yield dashboard
    dashboard.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def emulate(page: Dashboard, size) -> None:
    if size is None:
        return
    width, height = size
    page.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("section", SECTIONS)
def test_each_section_opens_from_the_header_and_fits(sized, section, size):
    page = sized
    emulate(page, SIZES[size])
    page.go(section)
    assert page.driver.current_url.endswith("#" + section), "the section is in the address, to bookmark"
    page.shown(SECTIONS[section])
    for other, css in SECTIONS.items():
        if other != section:
            assert not hidden_or_shown(page, css), f"{css} of {other} shows in {section}"
    assert page.find("#nav").is_displayed()
    if size == "desktop":
        screens = page.driver.execute_script("return document.documentElement.scrollHeight / window.innerHeight")
        assert screens <= 2.0, f"{section} is {screens:.1f} screens tall"
    if size == "phone":
        overflow = page.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{section} is {overflow} px wider than the phone"
        small = page.driver.execute_script(
            "return Array.from(document.querySelectorAll('#nav a, main button, main select'))"
            ".filter((e) => e.offsetParent && e.getBoundingClientRect().height < 40).map((e) => e.id || e.textContent)")
        assert not small, f"controls too small for a finger: {small}"
    page.screenshot(f"section-{section}-{size}.png")


def test_a_bookmarked_section_opens_directly(dashboard):
    dashboard.driver.get(dashboard.base_url + "/#settings")
    dashboard.shown("#config")
    assert not hidden_or_shown(dashboard, "#live-grid-card")


def test_the_live_grid_shows_every_camera(dashboard):
    dashboard.go("live")
    # Every camera's picture, the one that does not detect too (its captured frame, without boxes).
    for camera_id in [WALK_CAMERA] + BARS_CAMERAS:
        dashboard.loaded_picture(f'#live-grid .tile[data-camera="{camera_id}"] img', 30)
    tiles = dashboard.find_all("#live-grid .tile")
    assert [t.get_attribute("data-camera") for t in tiles] == [WALK_CAMERA] + BARS_CAMERAS
    assert all(t.is_displayed() for t in tiles)
    no_detect = dashboard.find(f'#live-grid .tile[data-camera="{NO_DETECT_CAMERA}"]')
    assert "detecting off" in no_detect.text and "streaming" in no_detect.text
    assert "Waiting for a frame" not in no_detect.text and no_detect.get_attribute("data-frame")
    walk = dashboard.find(f'#live-grid .tile[data-camera="{WALK_CAMERA}"]')
    assert walk.find_elements("css selector", "svg polygon"), "the walking camera's zone is drawn"
    # Motion gating is on by default: people walking in view show as motion on the tile.
    dashboard.wait(lambda _d: walk.find_elements("css selector", ".pill.motion"), "the walking camera's motion pill", 30)
    # The tiles refresh: a later frame replaces the first.
    first = walk.get_attribute("data-frame")
    dashboard.wait(lambda _d: walk.get_attribute("data-frame") != first, "a tile to refresh", 10)
    # The grid says what it fetches.
    meta = dashboard.wait(lambda _d: re.search(r"(\d+) refreshing · ([\d.]+) pictures/s, (\d+) kB/s", dashboard.text("#grid-meta")),
                          "the grid's rate")
    dashboard.wait(lambda _d: float(re.search(r"([\d.]+) pictures/s", dashboard.text("#grid-meta")).group(1)) > 0,
                   "the grid to count the pictures it fetches")
    assert int(meta.group(1)) <= 4, "one request at a time per tile"
    dashboard.screenshot("live-grid.png", "#live-grid-card")
    # A click shows the camera large.
    dashboard.find('#live-grid .tile[data-camera="gate"]').click()
    dashboard.wait(lambda _d: "gate" in dashboard.text("#live-name"), "the live view to show gate")
    dashboard.loaded_picture("img#live", 30)


def test_a_camera_that_does_not_detect_shows_its_captured_frame_large_and_in_the_zone_editor(dashboard):
    dashboard.go("live")
    tile = f'#live-grid .tile[data-camera="{NO_DETECT_CAMERA}"]'
    grid_size = dashboard.natural_size(dashboard.loaded_picture(tile + " img", 30))
    dashboard.find(tile).click()
    dashboard.wait(lambda _d: NO_DETECT_CAMERA in dashboard.text("#live-name"), f"the live view to show {NO_DETECT_CAMERA}")
    # Large: its newest captured frame, refreshed, with no boxes and no detection rows, and a note why.
    live = dashboard.loaded_picture("img#live", 30)
    assert dashboard.natural_size(live) == grid_size
    first = live.get_attribute("data-frame")
    dashboard.wait(lambda _d: live.get_attribute("data-frame") not in ("", first), "the large picture to refresh", 10)
    dashboard.wait(lambda _d: "detecting off" in dashboard.text("#detections-meta").lower(), "the note that it does not detect")
    assert not dashboard.find("#live-note").is_displayed()
    assert not dashboard.find_all("#live-boxes *") and not dashboard.find_all("#detections tr")
    dashboard.screenshot("live-detect-off.png", "#live-one")
    # The zone editor draws on that frame, not on the "no frame yet" stand-in.
    dashboard.go("zones")
    dashboard.select("select#editor-camera", NO_DETECT_CAMERA)
    snapshot = dashboard.loaded_picture("img#editor-snapshot", 30)
    dashboard.wait(lambda _d: (snapshot.get_attribute("src") or "").startswith("blob:"), "the editor to show the captured frame", 10)
    dashboard.wait(lambda _d: dashboard.natural_size(snapshot) == grid_size, "the captured frame to load in the editor", 10)
    assert not dashboard.text("#editor-note").strip(), dashboard.text("#editor-note")


def test_a_review_item_of_overlapping_events_is_marked_reviewed_for_good(dashboard, appliance):
    def grouped(_driver):
        answer = appliance.get("/api/v1/review", params={"camera": WALK_CAMERA}).json()
        return next((item for item in answer["items"] if item["event_count"] >= 2 and item["end_time"]), None)
    item = dashboard.wait(grouped, "a review item of two events or more", REVIEW_TIMEOUT_S, poll_s=1.0)
    dashboard.go("review")
    dashboard.select("#review-reviewed", "")  # every item, reviewed or not
    css = f'#review-list .review-item[data-id="{item["id"]}"]'
    node = dashboard.shown(css, 30)
    assert "events" in node.text and item["labels"][0] in node.text
    assert re.search(r"\d+ of \d+ item", dashboard.text("#review-count")), "the total is shown"
    dashboard.loaded_picture(css + " .strip img", 30)
    dashboard.screenshot("review.png", "#review")
    # Its clip plays inline, from the event clip route through a signed URL.
    dashboard.wait(lambda _d: node.find_element("css selector", 'button[aria-label="play the clip of this item"]').is_enabled(),
                   "the item's clip to be recorded", 60)
    node.find_element("css selector", 'button[aria-label="play the clip of this item"]').click()
    state = wait_playing(dashboard, css + " video")
    assert "sig=" in state["src"] and TOKEN not in state["src"]
    node.find_element("css selector", 'button[aria-label="mark this item reviewed"]').click()
    dashboard.wait(lambda _d: dashboard.find(css).get_attribute("data-reviewed") == "true", "the item to show reviewed")
    dashboard.driver.refresh()  # the token stays for the tab
    dashboard.go("review")
    dashboard.select("#review-reviewed", "1")
    assert dashboard.shown(css, 30).get_attribute("data-reviewed") == "true"
    marked = appliance.get("/api/v1/review", params={"camera": WALK_CAMERA, "reviewed": "1"}).json()
    assert item["id"] in [i["id"] for i in marked["items"]]


def test_a_wrong_token_is_told_clearly(driver, appliance, console):
    console.allow(r"status of 401")
    page = Dashboard(driver, appliance.base_url, console)
    driver.get(appliance.base_url + "/")
    driver.execute_script("sessionStorage.clear();")
    driver.get(appliance.base_url + "/")
    from selenium.webdriver.common.keys import Keys

    page.shown("#token-input").send_keys("not-" + TOKEN, Keys.ENTER)
    page.wait(lambda _d: "not accepted" in page.text("#login-error"), "the login form to say the token is wrong")
    assert not page.find("#main").is_displayed() and not page.find("#nav").is_displayed()


def test_review_keys_select_an_item_and_mark_it_reviewed(dashboard, appliance):
    dashboard.wait(lambda _d: appliance.get("/api/v1/review").json()["items"], "a review item", REVIEW_TIMEOUT_S, poll_s=1.0)
    # Every item unreviewed first, so that the key's mark is its own.
    answer = appliance.request("POST", "/api/v1/review/reviewed", json={"before": time.time() + 60, "reviewed": False})
    assert answer.status_code == 200, answer.text
    dashboard.go("review")
    dashboard.select("#review-reviewed", "")
    dashboard.shown("#review-list .review-item")
    from selenium.webdriver.common.action_chains import ActionChains

    dashboard.find("#review h2").click()  # the focus leaves the filters, as a person's click does
    ActionChains(dashboard.driver).send_keys("j").perform()
    item_id = dashboard.shown("#review-list .review-item.selected").get_attribute("data-id")
    ActionChains(dashboard.driver).send_keys("r").perform()
    css = f'#review-list .review-item[data-id="{item_id}"]'
    dashboard.wait(lambda _d: dashboard.find(css).get_attribute("data-reviewed") == "true", "r to mark the item reviewed")
    marked = appliance.get("/api/v1/review", params={"reviewed": "1"}).json()
    assert item_id in [i["id"] for i in marked["items"]]
    labels = [b.get_attribute("aria-label") for b in dashboard.find_all("#review button, #review select, #review input")]
    assert all(labels), "every control of Review has a label for screen readers"


def paused(page: Dashboard, css: str) -> bool:
    return page.driver.execute_script("return document.querySelector(arguments[0]).paused", css)


def test_review_keys_k_goes_back_and_space_plays_and_pauses_the_clip(dashboard, appliance):
    def ended_with_a_clip(_driver):
        items = appliance.get("/api/v1/review", params={"reviewed": ""}).json()["items"]
        return len(items) >= 2 and next((i for i in items if i["end_time"] and any(e["has_clip"] for e in i["events"])), None)
    item = dashboard.wait(ended_with_a_clip, "two review items, one ended with its clip", REVIEW_TIMEOUT_S, poll_s=1.0)
    dashboard.go("review")
    dashboard.select("#review-reviewed", "")
    dashboard.shown("#review-list .review-item:nth-child(2)")
    from selenium.webdriver.common.action_chains import ActionChains

    dashboard.find("#review h2").click()  # the focus leaves the filters, as a person's click does
    for key in "jj":
        ActionChains(dashboard.driver).send_keys(key).perform()
    assert dashboard.find_all("#review-list .review-item")[1].get_attribute("class").endswith("selected")
    ActionChains(dashboard.driver).send_keys("k").perform()
    first = dashboard.find_all("#review-list .review-item")[0]
    dashboard.wait(lambda _d: "selected" in first.get_attribute("class").split(), "k to go back to the item before")
    assert len(dashboard.find_all("#review-list .review-item.selected")) == 1
    # A click selects the item with a clip; space plays its clip and pauses it.
    css = f'#review-list .review-item[data-id="{item["id"]}"]'
    dashboard.wait(lambda _d: dashboard.find(css + ' button[aria-label="play the clip of this item"]').is_enabled(),
                   "the page to know the item's clip", 30)
    dashboard.find(css + " .item-info").click()
    assert "selected" in dashboard.find(css).get_attribute("class").split()
    dashboard.driver.execute_script("document.querySelector(arguments[0]).muted = true;", css + " video")
    ActionChains(dashboard.driver).send_keys(" ").perform()
    dashboard.wait(lambda _d: not paused(dashboard, css + " video"), "space to start the clip", 30)
    state = wait_playing(dashboard, css + " video")
    assert "sig=" in state["src"] and TOKEN not in state["src"]
    ActionChains(dashboard.driver).send_keys(" ").perform()
    dashboard.wait(lambda _d: paused(dashboard, css + " video"), "space to pause the clip")
    ActionChains(dashboard.driver).send_keys(" ").perform()
    dashboard.wait(lambda _d: not paused(dashboard, css + " video"), "space to play the clip again")


def test_reviewed_up_to_here_marks_the_item_and_every_older_one(dashboard, appliance):
    dashboard.wait(lambda _d: len(appliance.get("/api/v1/review", params={"camera": WALK_CAMERA, "reviewed": ""}).json()["items"]) >= 3,
                   "three review items", REVIEW_TIMEOUT_S, poll_s=1.0)
    answer = appliance.request("POST", "/api/v1/review/reviewed", json={"before": time.time() + 60, "reviewed": False})
    assert answer.status_code == 200, answer.text
    dashboard.go("review")
    dashboard.select("#review-camera", WALK_CAMERA)
    dashboard.select("#review-reviewed", "")
    dashboard.shown("#review-list .review-item:nth-child(3)")
    shown = [node.get_attribute("data-id") for node in dashboard.find_all("#review-list .review-item")]
    clicked = shown[1]
    css = f'#review-list .review-item[data-id="{clicked}"]'
    dashboard.find(css + ' button[aria-label="mark this item and every older one reviewed"]').click()
    dashboard.wait(lambda _d: dashboard.find(css).get_attribute("data-reviewed") == "true", "the item to show reviewed")
    items = {i["id"]: i for i in appliance.get("/api/v1/review", params={"camera": WALK_CAMERA, "reviewed": ""}).json()["items"]}
    start = items[clicked]["start_time"]
    older = [i for i in items.values() if i["start_time"] <= start]
    newer = [i for i in items.values() if i["start_time"] > start]
    assert len(older) >= 2 and all(i["reviewed"] for i in older), older
    assert newer and not any(i["reviewed"] for i in newer), "a newer item is left as it was"
    for item_id in shown[2:]:
        assert dashboard.find(f'#review-list .review-item[data-id="{item_id}"]').get_attribute("data-reviewed") == "true"
    assert dashboard.find(f'#review-list .review-item[data-id="{shown[0]}"]').get_attribute("data-reviewed") == "false"
