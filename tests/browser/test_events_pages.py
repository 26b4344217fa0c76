"""The events list past its first page and the recordings card's clip count.

The appliance of this module has one camera drawing test bars, and starts on an event database
already holding more events than one page of the list, every other one with a clip, written
through the event store's own API. The list must say how many there are and load the next page
with "More" (keeping its filters); the recordings card must count every event clip, not those of
the page.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from edge_app.events.model import Event
from edge_app.events.store import EventStore
from tests.browser.conftest import TOKEN
from tests.browser.dashboard import Dashboard
from testkit.appliance import ApplianceProcess
from testkit.net import free_port

pytestmark = pytest.mark.slow

CAMERA = "yard"
EVENT_COUNT = 130
LABELS = ("person", "car")
PAGE = 50
CLIP_COUNT = (EVENT_COUNT + 1) // 2  # every even one


def seed_events(directory: Path, now_s: float) -> None:
    """EVENT_COUNT ended events of the last hours, labels alternating; every even one has a clip."""
    store = EventStore(directory)
    try:
        for n in range(EVENT_COUNT):
            start = now_s - 3600 - 60 * n
            event = Event(id=f"{start:.3f}-{CAMERA}-{n}", camera_id=CAMERA, label=LABELS[n % 2], track_id=n, score=0.6,
                          top_score=0.8, box=(10.0, 10.0, 50.0, 80.0), frame_time=start + 1, start_time=start,
                          end_time=start + 3)
            assert store.save_event(event)
            if n % 2 == 0:
                assert store.save_clip(event.id, f"events/{event.id}.mp4", 1000, 3.0, start, start + 3)
        assert store.flush(60), "the event store did not write the seeded events"
    finally:
        store.close()


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
