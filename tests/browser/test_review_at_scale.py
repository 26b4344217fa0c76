"""The Review section over a large event database, a wrong token, and a restart of the appliance.

The appliance of this module starts on an event database already holding 10,000 events of the
last two days, written through the event store's own API (as the appliance writes them), and two
cameras drawing test bars. The page must paint its first review items within a second of being
opened (issue 38, "Speed"); a wrong token shows a clear message and none of the appliance's data;
stopping and starting the real appliance on the same data directory, the open page recovers by
itself and an item marked reviewed before stays reviewed.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from tests.browser.conftest import TOKEN
from tests.browser.dashboard import Dashboard
from tests.support.event_store import event, seed_store
from testkit.appliance import ApplianceProcess
from testkit.net import free_port

pytestmark = pytest.mark.slow

EVENT_COUNT = 10_000
CAMERAS = ("yard", "gate")
LABELS = ("person", "car", "dog")
#: the requirement (issue 38, "Speed"): first paint of Review with 10,000 stored events
FIRST_PAINT_BOUND_MS = 1000.0
LOADS = 3
#: marks the first time review items are on screen: the frame after they entered the document
PAINT_PROBE = """
new MutationObserver((changes, observer) => {
  if (!document.querySelector("#review-list .review-item")) return;
  observer.disconnect();
  requestAnimationFrame(() => setTimeout(() => performance.mark("review-items-painted"), 0));
}).observe(document, {childList: true, subtree: true});
"""


def seed_events(directory: Path, count: int, now_s: float) -> None:
    """``count`` ended events over the last two days, every third close after the one before (so
    they group into items of several events), written by an EventStore as the appliance writes."""
    starts, start = [], now_s - 2 * 86400
    for n in range(count):
        start += 2.0 if n % 3 else 40.0
        starts.append(start)
    seed_store(directory, (event(n, CAMERAS[n % 2], LABELS[n % 3], start, score=0.6, box=(10.0, 10.0, 50.0, 80.0),
                                 end_time=start + 3) for n, start in enumerate(starts)))


@pytest.fixture(scope="module")
def appliance(tmp_path_factory, browser_broker, model_path):
    workdir = tmp_path_factory.mktemp("appliance-10k")
    seed_events(workdir / "events", EVENT_COUNT, time.time())
    config = {
        "device_id": "browser-10k",
        "cameras": [{"id": camera_id, "source": "test://bars", "fps_limit": 1, "detect": False} for camera_id in CAMERAS],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"enabled": True, "host": browser_broker.host, "port": browser_broker.port},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
        "events": {"enabled": True, "dir": str(workdir / "events")},
    }
    with ApplianceProcess(config, workdir) as app:
        yield app


def test_the_appliance_holds_the_seeded_events(appliance):
    answer = appliance.get("/api/v1/review", params={"reviewed": ""}).json()
    assert answer["total"] >= EVENT_COUNT // 10 and len(answer["items"]) == 50


def first_paint_ms(page: Dashboard) -> float:
    """Milliseconds from the navigation's start to the first review items on screen, by the page's clock."""
    driver = page.driver
    driver.get("about:blank")  # a new document each time: the same address would only move to its #review
    driver.get(page.base_url + "/#review")
    page.wait(lambda d: d.execute_script("return performance.getEntriesByName('review-items-painted').length"),
              "the review items to be painted", 30)
    return driver.execute_script("return performance.getEntriesByName('review-items-painted')[0].startTime")


def test_review_paints_its_first_items_within_a_second_over_10000_events(dashboard):
    driver = dashboard.driver
    probe = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PAINT_PROBE})
    try:
        dashboard.go("review")  # once, so the browser has the page's files as a returning user does
        dashboard.shown("#review-list .review-item", 30)
        times_ms = [first_paint_ms(dashboard) for _ in range(LOADS)]
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": probe["identifier"]})
    assert len(dashboard.find_all("#review-list .review-item")) == 50, "a page of 50 items, not every item"
    assert "of " in dashboard.text("#review-count")
    # The median of three loads: one load can land on a moment another process has the CPU.
    print(f"first paint of Review over {EVENT_COUNT} events: {times_ms} ms")
    assert statistics.median(times_ms) < FIRST_PAINT_BOUND_MS, f"first paint of Review took {times_ms} ms"


def test_a_wrong_token_shows_a_clear_message_and_no_data(driver, appliance, console):
    console.allow(r"status of 401")
    page = Dashboard(driver, appliance.base_url, console)
    driver.get(appliance.base_url + "/")
    # A token that was right once and no longer is: the page opens with it stored in the tab.
    driver.execute_script("sessionStorage.setItem('edge-app.api-token', arguments[0]);", "not-" + TOKEN)
    driver.get("about:blank")
    driver.get(appliance.base_url + "/#review")
    page.wait(lambda _d: "not accepted" in page.text("#login-error"), "the page to say the token was not accepted")
    assert page.find("#login-form").is_displayed() and not page.find("#main").is_displayed()
    assert page.text("#link") == "locked"
    shown = driver.execute_script("return document.body.innerText")
    for data in CAMERAS + ("browser-10k", "person"):
        assert data not in shown, f"{data!r} is shown to a client with a wrong token"
    assert not driver.execute_script("return document.querySelectorAll('#review-list .review-item, #live-grid .tile').length")


def test_the_page_recovers_from_a_restart_and_the_marks_survive_it(dashboard, appliance, console):
    dashboard.go("review")
    dashboard.select("#review-reviewed", "")  # every item, reviewed or not
    first = dashboard.shown("#review-list .review-item", 30)
    item_id = first.get_attribute("data-id")
    css = f'#review-list .review-item[data-id="{item_id}"]'
    if dashboard.find(css).get_attribute("data-reviewed") == "true":  # a mark of an earlier run of the test
        dashboard.find(css).find_element("css selector", 'button[aria-label="mark this item not reviewed"]').click()
        dashboard.wait(lambda _d: dashboard.find(css).get_attribute("data-reviewed") == "false", "the item unmarked")
    dashboard.find(css).find_element("css selector", 'button[aria-label="mark this item reviewed"]').click()
    dashboard.wait(lambda _d: dashboard.find(css).get_attribute("data-reviewed") == "true", "the item to show reviewed")

    console.allow(r"ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|status of 503")
    appliance.terminate()
    dashboard.wait(lambda _d: dashboard.text("#link") == "offline", "the page to say the appliance is offline", 15)
    assert dashboard.find(css).get_attribute("data-reviewed") == "true", "what was shown stays while it is away"
    appliance.start()  # the same data directory, configuration and port
    # No reload: the open page finds the appliance again and shows it as it is now.
    dashboard.wait(lambda _d: dashboard.text("#link") in ("online", "MQTT disconnected"), "the page to reconnect", 60)
    assert dashboard.find("#main").is_displayed() and not dashboard.find("#login").is_displayed()
    dashboard.select("#review-reviewed", "1")
    dashboard.wait(lambda _d: dashboard.find_all(css), "the marked item among the reviewed ones", 30)
    assert dashboard.find(css).get_attribute("data-reviewed") == "true"
    marked = appliance.get("/api/v1/review", params={"reviewed": "1"}).json()
    assert item_id in [item["id"] for item in marked["items"]], "the mark is in the restarted appliance's database"
