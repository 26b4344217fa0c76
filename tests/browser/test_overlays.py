"""Boxes the page draws itself, in a real browser: an event's track over its playing clip, and the
live view's detections with labels that never hide each other.

Headless Chromium on the real API server in front of the in-memory appliance double: the bus
photo as the camera's latest frame (the bus and four people, two of them side by side), and an
event with a real clip made by ffmpeg and a stored track of a box moving right.
"""
from __future__ import annotations

import time

import cv2
import pytest

from edge_app.events.tracks import EventTrack, TrackPoint
from tests.api.conftest import bus_detections
from tests.api.served_double import served_double
from tests.api.test_events_routes import event
from tests.browser.conftest import screenshots_dir
from tests.browser.dashboard import Dashboard
from tests.browser.test_recording_playback import media_state, wait_playing
from tests.support.recordings import RecordedFiles

pytestmark = pytest.mark.slow

TOKEN = "overlay-browser-token-0123456789"
PRE_S = 3  # the clip starts this long before its event
CLIP_S = 8
CLIP_W, CLIP_H = 480, 270  # tests.support.recordings.make_fmp4
# A box 0.2 of the frame wide, moving right by 0.1 of the frame a second for 4 seconds.
TRACK = tuple(TrackPoint(round(i * 0.2, 2), (round(0.1 + i * 0.02, 4), 0.2, round(0.3 + i * 0.02, 4), 0.8)) for i in range(21))
PX_TOLERANCE = 3


@pytest.fixture(scope="module")
def overlay_api(tmp_path_factory, model_path, bus_jpg):
    folder = tmp_path_factory.mktemp("overlay-api")
    files = RecordedFiles(folder / "recordings")
    with served_double(folder, model_path, {"api": {"token": TOKEN}, "record": {"events": {"enabled": True}},
                                            "cameras": [{"id": "front", "source": "test://bars"}]}) as (server, service):
        service.recording_reader = files.store
        now = time.time()
        walked = event(1, "front", "person", now - 300, end_time=now - 296)
        service.add_event(walked, bus_jpg.read_bytes())
        files.add_clip(walked.id, "front", walked.start_time - PRE_S, CLIP_S)
        files.link_clip(service.event_store, walked.id)
        service.event_store.save_track(EventTrack(walked.id, walked.start_time, TRACK))
        assert service.event_store.flush()
        service.publish("front", cv2.imread(str(bus_jpg)), bus_detections())
        server.event = walked
        yield server
    files.close()


@pytest.fixture
def page(driver, overlay_api, console):
    return Dashboard(driver, overlay_api.url, console, screenshots_dir()).open(TOKEN)


RECTS_JS = """
const svg = document.querySelector(arguments[0]);
const toPage = (node) => { const b = node.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height}; };
return {view: svg.getAttribute("viewBox"),
        boxes: Array.from(svg.querySelectorAll("rect.det-box"), toPage),
        labels: Array.from(svg.querySelectorAll(".det-label"), (g) => Object.assign(toPage(g), {label: g.dataset.label,
          text: toPage(g.querySelector("text"))}))};
"""


def drawn(page, css):
    return page.driver.execute_script(RECTS_JS, css)


def overlaps(a, b):
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


def test_the_track_is_drawn_over_the_playing_clip(page, overlay_api):
    page.shown(f'.event[data-event-id="{overlay_api.event.id}"] img.thumb', 30).click()
    video = page.shown("#event-video", 30)
    wait_playing(page, "#event-video")
    page.wait(lambda _d: drawn(page, "#event-overlay")["boxes"], "the event's box over the playing clip", 30)
    # Paused at a known moment: 1.5 s into the event, the box is 0.13 of the frame further right.
    page.driver.execute_script("arguments[0].pause(); arguments[0].currentTime = arguments[1];", video, PRE_S + 1.5)
    page.wait(lambda _d: abs(media_state(page, "#event-video")["time"] - (PRE_S + 1.5)) < 0.01, "the seek", 30)

    def at_the_seek(_driver):
        found = drawn(page, "#event-overlay")
        return found if found["boxes"] and abs(found["boxes"][0]["x"] - 0.25 * CLIP_W) < PX_TOLERANCE else None
    found = page.wait(at_the_seek, "the box where the track has it 1.5 s into the event", 10)
    box = found["boxes"][0]
    assert found["view"] == f"0 0 {CLIP_W} {CLIP_H}", "drawn in the clip's own pixels"
    assert box["y"] == pytest.approx(0.2 * CLIP_H, abs=PX_TOLERANCE) and box["w"] == pytest.approx(0.2 * CLIP_W, abs=PX_TOLERANCE)
    assert [label["label"] for label in found["labels"]] == ["person"]
    # Before the event (the clip's pre-roll) there is no box; and the boxes can be switched off.
    page.driver.execute_script("arguments[0].currentTime = 0.5;", video)
    page.wait(lambda _d: not drawn(page, "#event-overlay")["boxes"], "no box before the event", 10)
    page.driver.execute_script("arguments[0].currentTime = arguments[1];", video, PRE_S + 1.5)
    page.wait(lambda _d: drawn(page, "#event-overlay")["boxes"], "the box again", 10)
    page.find("#event-boxes").click()
    page.wait(lambda _d: not drawn(page, "#event-overlay")["boxes"], "the boxes switched off", 10)
    page.find("#event-boxes").click()
    page.screenshot("clip-overlay.png", "#event-viewer")
    page.find("#event-viewer-close").click()
    page.wait(lambda _d: not page.find("#event-viewer").is_displayed(), "the viewer to close")


def test_the_live_views_labels_never_hide_each_other(page):
    page.view_live("front")
    expected = len(bus_detections().confidence)
    found = page.wait(lambda _d: (lambda f: f if len(f["labels"]) == expected else None)(drawn(page, "#live-boxes")),
                      f"the {expected} detections drawn over the live picture", 30)
    labels = found["labels"]
    assert sorted(label["label"] for label in labels) == ["bus", "person", "person", "person", "person"]
    clashes = [(a["label"], b["label"]) for i, a in enumerate(labels) for b in labels[i + 1:] if overlaps(a, b)]
    assert not clashes, f"labels overlap: {clashes} in {labels}"
    for label in labels:  # each text inside its own label
        text = label["text"]
        assert label["x"] <= text["x"] and text["x"] + text["w"] <= label["x"] + label["w"] + 0.5, label
    width, height = map(float, found["view"].split()[2:])
    assert all(0 <= label["x"] and label["x"] + label["w"] <= width + 0.5 and 0 <= label["y"] for label in labels)
    # Each label where a plain drawing puts it (above its box): two of them would overlap, so
    # the check above is one the placement passes, not one any drawing would.
    naive = [{"x": min(box["x"], width - label["w"]), "y": max(0, box["y"] - label["h"]), "w": label["w"], "h": label["h"]}
             for box, label in zip(found["boxes"], labels)]
    assert any(overlaps(a, b) for i, a in enumerate(naive) for b in naive[i + 1:])
    page.screenshot("live-labels.png", "#live-one")


def test_a_review_items_clip_shows_its_events_box(page, overlay_api):
    css = page.play_review_item(overlay_api.event.id)
    wait_playing(page, css + " video")
    found = page.wait(lambda _d: drawn(page, css + " svg.boxes")["boxes"] and drawn(page, css + " svg.boxes"),
                      "the event's box over the item's clip", 30)
    assert found["view"] == f"0 0 {CLIP_W} {CLIP_H}" and [label["label"] for label in found["labels"]] == ["person"]
    # the overlay covers the picture exactly: the video is shown at its own aspect ratio
    video, svg = (page.driver.execute_script("const r = document.querySelector(arguments[0]).getBoundingClientRect();"
                                             "return [r.width, r.height];", css + sel) for sel in (" video", " svg.boxes"))
    assert svg == pytest.approx(video, abs=1) and video[0] / video[1] == pytest.approx(CLIP_W / CLIP_H, rel=0.02)
