"""Event clips and recordings play in a real browser, through signed URLs, with seeking.

Headless Chromium loads the dashboard from the real API server (token set) in front of the
in-memory appliance double; the event's clip and the camera's segments are real fragmented MP4
files made by ffmpeg, as the recorder writes them. The page never has the token in a media URL:
the <video> elements load signed URLs, and must reach readyState >= 3 (HAVE_FUTURE_DATA) with
currentTime moving forward.
"""
from __future__ import annotations

import time

import cv2
import pytest

from tests.api.conftest import bus_detections
from tests.api.served_double import served_double
from tests.api.test_events_routes import event
from tests.browser.conftest import screenshots_dir
from tests.browser.dashboard import Dashboard
from tests.support.recordings import RecordedFiles

pytestmark = pytest.mark.slow

TOKEN = "recording-browser-token-0123456789"
CLIP_S = 8
PART_S = 4
SEGMENT_S = 10
HAVE_FUTURE_DATA = 3


@pytest.fixture(scope="module")
def recording_api(tmp_path_factory, model_path, bus_jpg):
    """The API with one event that has a real clip, and segments of "front": 20 and 8 hours ago, and 3 an hour ago."""
    folder = tmp_path_factory.mktemp("recording-api")
    files = RecordedFiles(folder / "recordings")
    with served_double(folder, model_path, {
            "api": {"token": TOKEN}, "record": {"events": {"enabled": True}, "continuous": {"enabled": True}},
            "cameras": [{"id": "front", "source": "test://bars"}]}) as (server, service):
        yield recorded_double(server, service, files, bus_jpg)
    files.close()


def recorded_double(server, service, files, bus_jpg):
    """The served double with one event that has a clip, one whose clip has two parts, and segments."""
    service.recording_reader = files.store
    now = time.time()
    walked = event(1, "front", "person", now - 600, end_time=now - 590)
    service.add_event(walked, bus_jpg.read_bytes())
    files.add_clip(walked.id, "front", walked.start_time - 5, CLIP_S)
    files.link_clip(service.event_store, walked.id)
    # A clip split at record.events.max_s: two parts, played one after the other.
    long_walk = event(2, "front", "person", now - 500, end_time=now - 480)
    service.add_event(long_walk, bus_jpg.read_bytes())
    for part in range(2):
        files.add_clip(long_walk.id, "front", long_walk.start_time - 5 + part * PART_S, PART_S, part=part)
    files.link_clip(service.event_store, long_walk.id)
    # Two seconds after the long walk: the same review item, whose clips play one after the other.
    after = event(3, "front", "person", now - 478, end_time=now - 474)
    service.add_event(after, bus_jpg.read_bytes())
    files.add_clip(after.id, "front", after.start_time - 5, PART_S)
    files.link_clip(service.event_store, after.id)
    for start in (now - 20 * 3600, now - 8 * 3600, now - 3600, now - 3600 + SEGMENT_S, now - 3600 + 2 * SEGMENT_S):
        files.add_segment("front", start, SEGMENT_S)
    service.publish("front", cv2.imread(str(bus_jpg)), bus_detections())
    server.event_id = walked.id
    server.service = service
    server.long_event_id = long_walk.id
    server.after_event_id = after.id
    return server


@pytest.fixture
def make_page_without_recording(driver, console, tmp_path, model_path, bus_jpg):
    with served_double(tmp_path, model_path, {"api": {"token": TOKEN},
                                              "cameras": [{"id": "front", "source": "test://bars"}]}) as (server, service):
        service.publish("front", cv2.imread(str(bus_jpg)), bus_detections())
        yield Dashboard(driver, server.url, console, None).open(TOKEN)
        driver.get("about:blank")  # the page stops polling before its server goes away


@pytest.fixture
def page(driver, recording_api, console):
    return Dashboard(driver, recording_api.url, console, screenshots_dir()).open(TOKEN)


def media_state(page, css):
    return page.driver.execute_script(
        "const v = document.querySelector(arguments[0]);"
        "return {ready: v.readyState, time: v.currentTime, paused: v.paused, src: v.currentSrc,"
        "        error: v.error && v.error.message, duration: v.duration};", css)


def wait_playing(page, css):
    """readyState >= 3, then currentTime moving forward; the media element's state at the end."""
    page.wait(lambda _d: media_state(page, css)["ready"] >= HAVE_FUTURE_DATA, f"{css} to have future data", 30)
    page.driver.execute_script("const v = document.querySelector(arguments[0]); v.muted = true;"
                               "if (v.paused) v.play();", css)
    first = media_state(page, css)["time"]
    page.wait(lambda _d: media_state(page, css)["time"] > first + 0.5, f"{css} to play on from {first}", 30)
    state = media_state(page, css)
    assert state["error"] is None, state
    return state


def test_the_event_viewer_plays_the_clip_seeks_and_offers_a_download(page, recording_api):
    card = page.shown(f'.event[data-event-id="{recording_api.event_id}"] img.thumb', 30)
    card.click()
    video = page.shown("#event-video", 30)
    state = wait_playing(page, "#event-video")
    assert "/clip.mp4?" in state["src"] and "sig=" in state["src"] and TOKEN not in state["src"]
    assert abs(state["duration"] - CLIP_S) < 0.5
    # Seeking to the end needs a Range request the server answers with 206.
    page.driver.execute_script("arguments[0].currentTime = arguments[1];", video, CLIP_S - 2.5)
    page.wait(lambda _d: media_state(page, "#event-video")["time"] >= CLIP_S - 2.5, "the seek", 30)
    page.wait(lambda _d: media_state(page, "#event-video")["ready"] >= HAVE_FUTURE_DATA, "data after the seek", 30)
    assert page.find("#event-download").is_displayed()
    assert not page.find("#event-full").is_displayed(), "the clip replaces the snapshot"
    page.screenshot("clip.png", "#event-viewer")
    page.find("#event-viewer-close").click()
    page.wait(lambda _d: not page.find("#event-viewer").is_displayed(), "the viewer to close")


def test_a_clip_split_at_max_s_plays_its_parts_one_after_the_other(page, recording_api):
    page.shown(f'.event[data-event-id="{recording_api.long_event_id}"] img.thumb', 30).click()
    state = wait_playing(page, "#event-video")
    assert "part=" not in state["src"] and abs(state["duration"] - PART_S) < 0.5
    page.wait(lambda _d: "part 1 of 2" in page.find("#event-clip-note").text, "the note to name the part", 30)
    # Near the end of the first part: when it ends the viewer goes on with the second and plays it.
    page.driver.execute_script("arguments[0].currentTime = arguments[1];", page.find("#event-video"), PART_S - 1)
    page.wait(lambda _d: "part=1" in media_state(page, "#event-video")["src"], "the second part", 30)
    state = wait_playing(page, "#event-video")
    assert "sig=" in state["src"] and TOKEN not in state["src"] and abs(state["duration"] - PART_S) < 0.5
    assert "part 2 of 2" in page.find("#event-clip-note").text
    page.find("#event-viewer-close").click()
    page.wait(lambda _d: not page.find("#event-viewer").is_displayed(), "the viewer to close")


def test_a_review_items_clips_play_through_every_part_of_every_event(page, recording_api):
    """The item of the long walk and the event just after it: part 1, part 2, then the next event's clip."""
    css = page.play_review_item(recording_api.long_event_id)
    state = wait_playing(page, css + " video")
    assert recording_api.long_event_id in state["src"] and "part=" not in state["src"]
    note = page.find(css + " .clip-note")
    page.wait(lambda _d: note.text == "Event 1 of 2, part 1 of 2.", "the note to say what plays", 30)
    for src_has, said in (("part=1", "Event 1 of 2, part 2 of 2."), (recording_api.after_event_id, "Event 2 of 2.")):
        page.driver.execute_script("arguments[0].currentTime = arguments[0].duration - 1;",
                                   page.find(css + " video"))
        page.wait(lambda _d: src_has in media_state(page, css + " video")["src"], f"the clip with {src_has}", 30)
        wait_playing(page, css + " video")
        page.wait(lambda _d: note.text == said, f"the note {said!r}", 30)


def test_the_camera_timeline_plays_a_chosen_time(page):
    page.view_live("front")
    page.wait(lambda _d: page.find("#rec-timeline").get_attribute("data-spans") == "3", "the timeline's 3 spans", 30)
    span = page.find_all("#rec-timeline .span")[-1]
    from selenium.webdriver.common.action_chains import ActionChains

    # Just left of the span (a few seconds of the day are less than a pixel wide): the click is
    # before the recorded time, so the page snaps to the start of the span, whatever the width.
    ActionChains(page.driver).move_to_element_with_offset(span, -span.size["width"] // 2 - 1, 0).click().perform()
    state = wait_playing(page, "#rec-video")
    assert "/recordings/export.mp4?" in state["src"] and "sig=" in state["src"] and TOKEN not in state["src"]
    assert abs(state["duration"] - 3 * SEGMENT_S) < 1, "the 3 segments of the span, exported as one file"
    assert page.find("#rec-download").is_displayed()
    assert page.find_all("#rec-timeline .cursor")
    page.screenshot("recordings.png", "#recordings")


def test_a_paused_recording_and_a_camera_that_cannot_record_are_shown_with_why(page, recording_api):
    from edge_app.record.types import CameraRecordingStatus
    from edge_app.reporting.protocol import RecordingReport

    service = recording_api.service
    why = "the disk has 3 MB free, below record.retain.reserve_mb (64 MB)"
    service.recording_report = RecordingReport(directory="recordings", paused=why, recording=[], bytes_written=5_000_000,
                                               packets_dropped=0)
    service.camera_recording["front"] = CameraRecordingStatus(
        camera_id="front", events_enabled=True, continuous_enabled=True, recording=False,
        unavailable="recording unavailable: test:// sources have no compressed stream")
    try:
        page.wait(lambda _d: f"Recording paused: {why}" in page.find("#health-banner").text, "the banner to say why", 30)
        fact = lambda _d: page.driver.execute_script(  # noqa: E731
            "const dt = [...document.querySelectorAll('#status dt')].find((d) => d.textContent === 'Recording');"
            "return dt ? dt.nextElementSibling.textContent : '';")
        page.wait(lambda d: "paused: " + why in fact(d), "the Recording fact to say it is paused", 30)
        assert "front: recording unavailable: test:// sources have no compressed stream" in fact(page.driver)
        # Space returned: the banner goes and the fact says it writes again.
        service.recording_report = RecordingReport(directory="recordings", paused=None, recording=["front"],
                                                   bytes_written=6_000_000, packets_dropped=0)
        page.wait(lambda d: fact(d).startswith("writing"), "the fact to say it writes", 30)
        page.wait(lambda _d: not page.find("#health-banner").is_displayed(), "the banner to go", 30)
    finally:
        service.recording_report = None
        service.camera_recording.clear()


def test_a_masked_camera_shows_its_re_encoder_and_its_drops(page, recording_api):
    from edge_app.record.types import CameraRecordingStatus
    from edge_app.reporting.protocol import RecordingReport

    service = recording_api.service
    service.recording_report = RecordingReport(directory="recordings", paused=None, recording=["front"],
                                               bytes_written=6_000_000, packets_dropped=0, masked_packets_dropped=12)
    service.camera_recording["front"] = CameraRecordingStatus(
        camera_id="front", events_enabled=True, continuous_enabled=True, recording=True, masked_encoder="nvenc",
        masked_packets_dropped=12)
    try:
        fact = lambda _d: page.driver.execute_script(  # noqa: E731
            "const dt = [...document.querySelectorAll('#status dt')].find((d) => d.textContent === 'Recording');"
            "return dt ? dt.nextElementSibling.textContent : '';")
        page.wait(lambda d: "front: masked, re-encoded with nvenc, 12 packets dropped" in fact(d),
                  "the Recording fact to name the masked camera's encoder and drops", 30)
    finally:
        service.recording_report = None
        service.camera_recording.clear()


def test_without_recording_the_card_says_so_and_asks_nothing(driver, console, make_page_without_recording):
    page = make_page_without_recording
    page.view_live("front")
    page.wait(lambda _d: "Nothing is recorded" in page.find("#rec-note").text, "the card to say nothing is recorded", 30)
    asked = page.driver.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)"
                                       ".filter((n) => n.includes('/api/v1/recordings') || n.includes('/clip'));")
    assert asked == []
