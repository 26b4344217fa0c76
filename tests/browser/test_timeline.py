"""The camera's timeline and the review filters in a real browser.

Headless Chromium on the real API server in front of the in-memory appliance double: real
fragmented MP4 segments made by ffmpeg half an hour ago, and events of the camera that make two
review items (one half an hour ago in the zone "driveway", one two hours ago in "porch"). The
timeline must show the recorded span and the items, zoom to an hour, play from the moment
clicked, and export the range dragged across it; the review list must filter by zone.
"""
from __future__ import annotations

import math

import time
from urllib.parse import parse_qs, urlsplit

import cv2
import pytest

from tests.api.conftest import bus_detections
from tests.api.served_double import served_double
from tests.api.test_events_routes import event
from tests.browser.conftest import screenshots_dir
from tests.browser.dashboard import Dashboard
from tests.browser.test_recording_playback import wait_playing
from tests.support.recordings import RecordedFiles

pytestmark = pytest.mark.slow

TOKEN = "timeline-browser-token-0123456789"
SEGMENT_S = 10
SEGMENTS = 3
RECORDED_AGO_S = 1800
ZONES = [{"name": name, "polygon": [[0, 0], [1, 0], [1, 1]]} for name in ("driveway", "porch")]
# seconds a pixel of the one-hour timeline may stand for on the narrowest window, and then some
CLICK_TOLERANCE_S = 15


@pytest.fixture(scope="module")
def timeline_api(tmp_path_factory, model_path, bus_jpg):
    folder = tmp_path_factory.mktemp("timeline-api")
    files = RecordedFiles(folder / "recordings")
    with served_double(folder, model_path, {
            "api": {"token": TOKEN}, "record": {"continuous": {"enabled": True}},
            "cameras": [{"id": "front", "source": "test://bars", "zones": ZONES}]}) as (server, service):
        service.recording_reader = files.store
        now = time.time()
        start = now - RECORDED_AGO_S
        for n in range(SEGMENTS):
            files.add_segment("front", start + n * SEGMENT_S, SEGMENT_S)
        recent = event(1, "front", "person", start + 8, end_time=start + 16, entered_zones=("driveway",))
        older = event(2, "front", "car", now - 7200, end_time=now - 7190, entered_zones=("porch",))
        for stored in (recent, older):
            service.add_event(stored, bus_jpg.read_bytes())
        service.publish("front", cv2.imread(str(bus_jpg)), bus_detections())
        server.recorded = (start, start + SEGMENTS * SEGMENT_S)
        server.recent, server.older = recent, older
        yield server
    files.close()


@pytest.fixture
def page(driver, timeline_api, console):
    page = Dashboard(driver, timeline_api.url, console, screenshots_dir()).open(TOKEN)
    page.view_live("front")
    return page


def timeline(page):
    node = page.find("#rec-timeline")
    return {name: node.get_attribute("data-" + name) for name in ("spans", "marks", "from", "to")}


def played_range(page):
    """The camera, from and to of the export the recordings player plays."""
    state = wait_playing(page, "#rec-video")
    assert "/recordings/export.mp4?" in state["src"] and "sig=" in state["src"] and TOKEN not in state["src"]
    query = parse_qs(urlsplit(state["src"]).query)
    return query["camera"][0], float(query["from"][0]), float(query["to"][0])


def x_of(page, at_s):
    """The offset from the timeline's centre, in CSS pixels, of the time ``at_s``."""
    window = timeline(page)
    width = page.find("#rec-timeline").size["width"]
    fraction = (at_s - float(window["from"])) / (float(window["to"]) - float(window["from"]))
    return round(fraction * width - width / 2)


def test_the_timeline_shows_coverage_and_review_items_and_plays_from_a_click(page, timeline_api):
    page.wait(lambda _d: timeline(page)["spans"] == "1" and timeline(page)["marks"] == "2",
              "24 hours: the recorded span and both review items", 30)
    assert float(timeline(page)["to"]) - float(timeline(page)["from"]) == 86400
    page.select("#rec-zoom", "3600")
    page.wait(lambda _d: float(timeline(page)["to"]) - float(timeline(page)["from"]) == 3600, "the timeline of an hour")
    page.wait(lambda _d: timeline(page)["marks"] == "1", "only the item of the last hour")
    recent = timeline_api.recent
    assert page.find("#rec-timeline .mark").get_attribute("data-id") == recent.id
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(page.driver).move_to_element_with_offset(page.find("#rec-timeline"), x_of(page, recent.start_time), 0).click().perform()
    camera, from_s, to_s = played_range(page)
    assert camera == "front" and abs(from_s - recent.start_time) < CLICK_TOLERANCE_S, (from_s, recent.start_time)
    assert to_s == pytest.approx(timeline_api.recorded[1], abs=0.01), "played to the end of the recorded span"
    assert page.find_all("#rec-timeline .cursor")
    page.screenshot("timeline.png", "#recordings")


def test_a_range_dragged_across_the_timeline_is_exported(page, timeline_api):
    page.select("#rec-zoom", "3600")
    page.wait(lambda _d: timeline(page)["spans"] == "1" and float(timeline(page)["to"]) - float(timeline(page)["from"]) == 3600,
              "the span on the timeline of an hour", 30)
    first, last = timeline_api.recorded
    from selenium.webdriver.common.action_chains import ActionChains

    bar = page.find("#rec-timeline")
    begin, end = x_of(page, first - 60), x_of(page, first + 20)
    ActionChains(page.driver).move_to_element_with_offset(bar, begin, 0).click_and_hold() \
        .move_by_offset((end - begin) // 2, 0).move_by_offset(end - begin - (end - begin) // 2, 0).release().perform()
    assert page.find_all("#rec-timeline .selection")
    camera, from_s, to_s = played_range(page)
    assert camera == "front"
    assert abs(from_s - (first - 60)) < CLICK_TOLERANCE_S and abs(to_s - (first + 20)) < CLICK_TOLERANCE_S, (from_s, to_s, first)
    assert "Selection" in page.text("#rec-playing")
    assert page.find("#rec-download").is_displayed()


@pytest.mark.parametrize("zone, shown", [("driveway", "recent"), ("porch", "older"), ("", "both")])
def test_review_items_filter_by_zone(page, timeline_api, zone, shown):
    page.go("review")
    page.select("#review-reviewed", "")
    page.select("#review-zone", zone)
    wanted = {"recent": [timeline_api.recent.id], "older": [timeline_api.older.id],
              "both": [timeline_api.recent.id, timeline_api.older.id]}[shown]

    def listed(_driver):
        ids = [node.get_attribute("data-id") for node in page.find_all("#review-list .review-item")]
        return ids if ids == wanted else None
    page.wait(listed, f"the items of zone {zone or 'any'}: {wanted}", 30)


def test_the_keyboard_plays_and_exports_from_the_timeline(page, timeline_api):
    """Tab to the timeline: End, then arrows back to the recorded span, Enter plays from there;
    Shift+arrows select a range, Enter exports it; Escape drops a selection."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    page.select("#rec-zoom", "3600")
    page.wait(lambda _d: timeline(page)["spans"] == "1" and float(timeline(page)["to"]) - float(timeline(page)["from"]) == 3600,
              "the span on the timeline of an hour", 30)
    first, last = timeline_api.recorded
    window = timeline(page)
    from_s, to_s = float(window["from"]), float(window["to"])
    step_s = (to_s - from_s) / 60
    bar = page.find("#rec-timeline")
    bar.send_keys(Keys.END)
    assert page.find_all("#rec-timeline .key-cursor") and bar.get_attribute("aria-valuetext")
    steps_back = math.ceil((to_s - first) / step_s)  # the cursor at most a step before the recorded span
    bar.send_keys(*([Keys.ARROW_LEFT] * steps_back), Keys.ENTER)
    camera, played_from, played_to = played_range(page)
    cursor_s = to_s - steps_back * step_s
    # Steps of a minute and a span of 30 s: a cursor just before the span plays it from its start, as a click beside it does.
    assert camera == "front" and played_from == pytest.approx(first, abs=1), (played_from, cursor_s, first)
    assert played_to == pytest.approx(last, abs=1)

    def shifted(*keys):  # Shift held down for these keys only
        chain = ActionChains(page.driver).key_down(Keys.SHIFT)
        for key in keys:
            chain = chain.send_keys(key)
        chain.key_up(Keys.SHIFT).perform()
    shifted(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    assert page.find_all("#rec-timeline .selection")
    bar.send_keys(Keys.ESCAPE)
    assert not page.find_all("#rec-timeline .selection")
    shifted(Keys.ARROW_RIGHT)
    bar.send_keys(Keys.ARROW_LEFT)  # a plain move drops the selection, as a click does
    assert not page.find_all("#rec-timeline .selection")
    shifted(Keys.ARROW_LEFT, Keys.ARROW_LEFT)  # the cursor was at cursor_s + 2 steps: the selection ends there
    bar.send_keys(Keys.ENTER)
    page.wait(lambda _d: "Selection" in page.text("#rec-playing"), "the selection to play", 30)

    def export_range(_driver):
        query = parse_qs(urlsplit(page.find("#rec-video").get_attribute("src") or "").query)
        return (float(query["from"][0]), float(query["to"][0])) if "from" in query and float(query["to"][0]) != last else None
    played_from, played_to = page.wait(export_range, "the export of the selection", 30)
    assert played_from == pytest.approx(cursor_s, abs=1) and played_to == pytest.approx(cursor_s + 2 * step_s, abs=1)
