"""The events list past its first page, the recordings card's clip count, and a one-camera appliance.

The appliance of this module has one camera drawing test bars, analysed (the live view and the
zone editor show analysed frames), and starts on an event database already holding more events
than one page of the list, every other one with a clip, written through the event store's own API. The list must say how many there are and load
the next page with "More" (keeping its filters); the recordings card must count every event clip,
not those of the page. With one camera the zone editor shows it at once and the live view says it
is loading until its first picture. A camera added with a source that refuses connections shows
"reconnecting" on its live tile.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.conftest import TOKEN
from tests.browser.dashboard import Dashboard
from tests.support.event_store import event, seed_store
from testkit.appliance import ApplianceProcess
from testkit.net import free_port

pytestmark = pytest.mark.slow

CAMERA = "yard"
EVENT_COUNT = 130
LABELS = ("person", "car")
PAGE = 50
CLIP_COUNT = (EVENT_COUNT + 1) // 2  # every even one
#: records what the live view's note says, from the page's first moment, with whether a picture is shown
NOTE_PROBE = """
window.liveNotes = [];
new MutationObserver(() => {
  const note = document.getElementById("live-note"), img = document.getElementById("live");
  if (!note || !img) return;
  const seen = [note.hidden, note.textContent, note.className, Boolean(img.getAttribute("src"))];
  const last = window.liveNotes[window.liveNotes.length - 1];
  if (!last || last.join("|") !== seen.join("|")) window.liveNotes.push(seen);
}).observe(document, {childList: true, subtree: true, attributes: true, characterData: true});
"""


def seed_events(directory: Path, now_s: float) -> None:
    """EVENT_COUNT ended events of the last hours, labels alternating; every even one has a clip."""
    starts = [now_s - 3600 - 60 * n for n in range(EVENT_COUNT)]
    seed_store(directory, (event(n, CAMERA, LABELS[n % 2], start, score=0.6, box=(10.0, 10.0, 50.0, 80.0),
                                 end_time=start + 3) for n, start in enumerate(starts)),
               with_clip=lambda ev: ev.track_id % 2 == 0)


@pytest.fixture(scope="module")
def appliance(tmp_path_factory, browser_broker, model_path):
    workdir = tmp_path_factory.mktemp("appliance-pages")
    seed_events(workdir / "events", time.time())
    config = {
        "device_id": "browser-pages",
        "cameras": [{"id": CAMERA, "source": "test://bars", "fps_limit": 1}],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"enabled": True, "host": browser_broker.host, "port": browser_broker.port},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
        "capture": {"backoff_initial_s": 0.5, "backoff_max_s": 2, "open_timeout_s": 3},
        "events": {"enabled": True, "dir": str(workdir / "events")},
    }
    with ApplianceProcess(config, workdir) as app:
        yield app


def cards(page: Dashboard) -> list:
    return page.find_all("#events-list .event")


def test_the_events_list_counts_them_all_and_more_loads_the_next_page(dashboard):
    dashboard.go("recordings")
    dashboard.wait(lambda _d: dashboard.text("#events-count") == f"· {PAGE} of {EVENT_COUNT} events",
                   "the list to say how many events there are", 30)
    assert len(cards(dashboard)) == PAGE
    # The recordings card counts every event clip, not only those of the page shown (25 of them).
    dashboard.wait(lambda _d: dashboard.text("#rec-clip-count") == str(CLIP_COUNT), "every event clip to be counted")
    more = dashboard.shown("#events-more")
    more.click()
    dashboard.wait(lambda _d: len(cards(dashboard)) == 2 * PAGE, "More to load the next page")
    assert dashboard.text("#events-count") == f"· {2 * PAGE} of {EVENT_COUNT} events"
    ids = [card.get_attribute("data-event-id") for card in cards(dashboard)]
    assert len(set(ids)) == len(ids), "no event twice"
    starts = [float(event_id.split("-")[0]) for event_id in ids]
    assert starts == sorted(starts, reverse=True), "newest first across the pages"
    # The list stays as long across refreshes (every 4 s).
    time.sleep(5)
    assert len(cards(dashboard)) == 2 * PAGE
    more.click()
    dashboard.wait(lambda _d: len(cards(dashboard)) == EVENT_COUNT, "More to load the last page")
    dashboard.wait(lambda _d: not more.is_displayed(), "More to go once every event is shown")
    assert dashboard.text("#events-count") == f"· {EVENT_COUNT} of {EVENT_COUNT} events"


def test_more_keeps_the_filters(dashboard):
    dashboard.go("recordings")
    dashboard.select("#event-label", "car")
    cars = EVENT_COUNT // 2
    dashboard.wait(lambda _d: dashboard.text("#events-count") == f"· {PAGE} of {cars} events",
                   "the filtered list's count", 30)
    dashboard.shown("#events-more").click()
    dashboard.wait(lambda _d: len(cards(dashboard)) == cars, "More to load the rest of the cars")
    labels = {card.find_element("css selector", ".event-label").text for card in cards(dashboard)}
    assert labels == {"car"}
    assert dashboard.text("#events-count") == f"· {cars} of {cars} events"
    assert not dashboard.find("#events-more").is_displayed()


def test_the_zone_editor_shows_the_only_camera_at_once(dashboard):
    dashboard.go("zones")
    dashboard.wait(lambda _d: dashboard.find("#editor-camera").get_attribute("value") == CAMERA,
                   "the editor to pick the only camera")
    picture = dashboard.loaded_picture("#editor-snapshot", 30)
    assert picture.get_attribute("src").startswith("blob:"), "the camera's snapshot, not the no-frame stand-in"


def test_the_live_view_says_loading_until_its_first_picture(dashboard):
    driver = dashboard.driver
    probe = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NOTE_PROBE})
    try:
        driver.get("about:blank")
        driver.get(dashboard.base_url + "/#live")  # the token stays for the tab
        dashboard.loaded_picture("img#live", 30)
        dashboard.wait(lambda _d: not dashboard.find("#live-note").is_displayed(), "the note to go with the picture")
        notes = driver.execute_script("return window.liveNotes")
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": probe["identifier"]})
    loading = [n for n in notes if not n[0] and n[1] == f"Loading {CAMERA}…"]
    assert loading, f"the note never said it was loading: {notes}"
    assert "loading" in loading[0][2] and loading[0][3] is False, "shown while there is no picture yet"
    assert notes[-1][0] is True and notes[-1][3] is True, f"the picture replaced the note: {notes[-1]}"


def test_a_camera_whose_source_is_down_shows_reconnecting_on_the_live_grid(dashboard, appliance):
    down = "down"
    source = f"rtsp://127.0.0.1:{free_port()}/nothing-listens-here"
    added = appliance.request("POST", "/api/v1/cameras", json={"id": down, "source": source, "fps_limit": 1,
                                                               "detect": False})
    assert added.status_code in (200, 201), added.text
    try:
        dashboard.go("live")
        tile = f'#live-grid .tile[data-camera="{down}"]'
        dashboard.wait(lambda _d: dashboard.find_all(tile) and dashboard.find(tile).get_attribute("data-state") == "reconnecting",
                       "the tile of the camera that is down to say reconnecting", 30)
        pill = dashboard.find(tile + " .pill.state")
        assert pill.text == "reconnecting" and pill.is_displayed()
        assert "Waiting for a frame (reconnecting)" in dashboard.find(tile).text
        # The camera that streams is not affected.
        assert dashboard.find(f'#live-grid .tile[data-camera="{CAMERA}"]').get_attribute("data-state") == "streaming"
    finally:
        assert appliance.request("DELETE", f"/api/v1/cameras/{down}").status_code == 204
