"""The dashboard in a real browser, against a running appliance that sees people walk by.

Headless Chromium loads the page from ``edge-app run`` (real RTSP camera, real YOLOv8n, real
Mosquitto; see conftest.py), logs in with the API token and is used the way a person would:
clicking, typing, drawing with the mouse. What the page claims is checked against the REST API
over HTTP. After every test the browser console must hold no error the test did not provoke.

With ``EDGE_APP_SCREENSHOTS=<folder>`` the tests also save pictures of the views they reach
(``scripts/screenshots.py`` refreshes ``docs/screenshots/`` that way).
"""
from __future__ import annotations

import re

import pytest
import yaml

from tests.browser.conftest import EDIT_CAMERA, LINE, WALK_CAMERA, ZONE

pytestmark = pytest.mark.slow

# The walking clip is 1280x720; the live view and event snapshots are full frames.
FRAME_SIZE = (1280, 720)
# People cross the picture 6 s of every 10 s of the looping clip.
PICTURE_CHANGE_TIMEOUT_S = 20.0
# The model is loaded and the RTSP camera connected within seconds; a walk takes 6 s; an event's
# snapshot is written while it is open.
EVENT_TIMEOUT_S = 60.0
# Drawn in the area editor with the mouse, as fractions of the picture's size: kind, name, points.
DRAWN_AREAS = [
    ("zone", "door", [(0.10, 0.20), (0.40, 0.20), (0.40, 0.80), (0.10, 0.80)]),
    ("line", "gate", [(0.25, 0.10), (0.25, 0.90)]),
]
POINT_TOLERANCE = 0.02


def camera_config(appliance, camera_id):
    response = appliance.get("/api/v1/config")
    assert response.status_code == 200, response.text
    return next(c for c in response.json()["cameras"] if c["id"] == camera_id)


def test_the_page_loads_and_keeps_refreshing_without_console_errors(dashboard):
    rows = {cam: dashboard.camera_row(cam) for cam in (WALK_CAMERA, EDIT_CAMERA)}
    first = rows[WALK_CAMERA].text
    # A later poll has rendered the rows again (frame counters move): the polling itself ran
    # at least once more without an error on the console.
    dashboard.wait(lambda _d: dashboard.camera_row(WALK_CAMERA).text != first, "the camera table to refresh", 20)


def relative_luminance(css_color):
    """WCAG relative luminance of a computed CSS colour, ``rgb(r, g, b)`` or ``rgba(...)``."""
    channels = [float(v) / 255 for v in re.findall(r"[\d.]+", css_color)[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(color_a, color_b):
    lighter, darker = sorted((relative_luminance(color_a), relative_luminance(color_b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_status_badges_are_readable(dashboard):
    """The badges (the header's link state, each camera's state) are coloured boxes with text in
    them: the text must stand out from the box, whatever other rules of the style sheet match."""
    dashboard.camera_row(WALK_CAMERA)
    dashboard.wait(lambda _d: dashboard.text("header #link") not in ("", "connecting"), "the header badge to show the link")
    badges = [dashboard.find("header #link")] + dashboard.find_all("#cameras .pill")
    assert len(badges) >= 3, "the header badge and one badge per camera"
    for badge in badges:
        color, background = badge.value_of_css_property("color"), badge.value_of_css_property("background-color")
        ratio = contrast_ratio(color, background)
        # 3:1 is WCAG's least contrast for bold or large text and for user interface components.
        assert ratio >= 3.0, (f"badge {badge.text!r} (class {badge.get_attribute('class')!r}) has text {color} "
                              f"on {background}: contrast {ratio:.2f}:1")


def test_the_live_view_shows_frames_that_change(dashboard):
    live = dashboard.view_live(WALK_CAMERA)
    width, height = dashboard.natural_size(live)
    assert width * FRAME_SIZE[1] == height * FRAME_SIZE[0], f"live picture {width}x{height}, camera is {FRAME_SIZE}"
    first = dashboard.fingerprint(live)
    assert first, "the live picture cannot be read back"
    dashboard.wait(lambda _d: (dashboard.fingerprint(dashboard.find("img#live")) or first) != first,
                   "the live picture to change while people walk", PICTURE_CHANGE_TIMEOUT_S)
    if dashboard.screenshots_dir:
        dashboard.wait(lambda _d: dashboard.people_in_picture(dashboard.find("img#live")),
                       "people in the live picture", PICTURE_CHANGE_TIMEOUT_S)
        dashboard.screenshot("dashboard.png", down_to="#live")


def assert_drawn_at(dashboard, css, points):
    """The overlay shape ``css`` is in the page, where the configuration puts it."""
    drawn = dashboard.shape_points(dashboard.present(css))
    assert len(drawn) == len(points), f"{css} has points {drawn}, the configuration {points}"
    for got, want in zip(drawn, points):
        assert list(got) == pytest.approx(list(want), abs=POINT_TOLERANCE), f"{css} is drawn at {drawn}, configured {points}"


def test_the_live_view_overlays_the_cameras_zones_and_lines(dashboard, appliance):
    camera = camera_config(appliance, WALK_CAMERA)
    dashboard.view_live(WALK_CAMERA)
    assert_drawn_at(dashboard, f'svg#live-overlay polygon[data-zone="{ZONE}"]', camera["zones"][0]["polygon"])
    assert_drawn_at(dashboard, f'svg#live-overlay line[data-line="{LINE}"]', camera["lines"][0]["points"])


def test_an_event_appears_with_its_thumbnail_and_opens_its_snapshot(dashboard, appliance):
    # An event gets its snapshot a little after it starts, and the page shows a stand-in until
    # then: the thumbnail wanted is the snapshot itself, a whole frame of the camera.
    def event_with_thumbnail(_driver):
        for item in dashboard.find_all("#events-list .event[data-event-id]"):
            thumbs = item.find_elements("css selector", "img.thumb")
            if thumbs and dashboard.natural_size(thumbs[0]) == FRAME_SIZE:
                return item
        return None
    item = dashboard.wait(event_with_thumbnail, "an event with its snapshot as thumbnail in the events view",
                          EVENT_TIMEOUT_S)
    event_id = item.get_attribute("data-event-id")
    stored = appliance.get(f"/api/v1/events/{event_id}")
    assert stored.status_code == 200, f"the page lists event {event_id}, the API says {stored.status_code}"
    assert stored.json()["camera_id"] == WALK_CAMERA and stored.json()["has_snapshot"] is True, stored.json()
    dashboard.screenshot("events.png", "#events")

    item.find_element("css selector", "img.thumb").click()
    dashboard.shown("#event-viewer")
    full = dashboard.loaded_picture("#event-viewer img#event-full")
    assert dashboard.natural_size(full) == FRAME_SIZE, "the full snapshot is not the camera's whole frame"
    dashboard.find("#event-viewer button.close").click()
    dashboard.wait(lambda _d: not dashboard.find("#event-viewer").is_displayed(), "the snapshot viewer to close")

    # The camera filter: the camera without analysis has no events, the walking one has.
    dashboard.select("select#event-camera", EDIT_CAMERA)
    dashboard.wait(lambda _d: not dashboard.find_all("#events-list .event"), f"no events listed for {EDIT_CAMERA}")
    dashboard.select("select#event-camera", WALK_CAMERA)
    dashboard.wait(lambda _d: dashboard.find_all(f'#events-list .event[data-event-id="{event_id}"]'),
                   f"event {event_id} listed again for {WALK_CAMERA}")


def test_the_counts_show_what_the_api_counts(dashboard, appliance):
    def line_out():
        return appliance.get("/api/v1/counts").json()["lines"].get(LINE, {}).get("out", 0)
    dashboard.wait(lambda _d: line_out() > 0, f"someone to cross line {LINE}", EVENT_TIMEOUT_S)
    row = f'#counts tr[data-count-line="{LINE}"]'

    def page_agrees(_driver):
        shown = [dashboard.text(f"{row} td.in"), dashboard.text(f"{row} td.out")]
        totals = appliance.get("/api/v1/counts").json()["lines"][LINE]
        return shown == [str(totals["in"]), str(totals["out"])]
    dashboard.wait(page_agrees, f"the page's totals of line {LINE} to match /api/v1/counts")
    # Labels seen on a camera and in a zone keep their rows (at 0 once everyone has left).
    dashboard.present(f'#counts tr[data-count-camera="{WALK_CAMERA}"][data-label="person"] td.count')
    dashboard.present(f'#counts tr[data-count-zone="{ZONE}"][data-label="person"] td.count')
    dashboard.screenshot("counts.png", "#counts")


def test_an_event_is_deleted_only_after_confirmation(dashboard, appliance):
    def ended_event_listed(_driver):
        events = appliance.get("/api/v1/events", params={"camera": WALK_CAMERA, "limit": 500}).json()["events"]
        for event in events:
            if event["end_time"] is not None and dashboard.find_all(f'#events-list .event[data-event-id="{event["id"]}"]'):
                return event["id"]
        return None
    event_id = dashboard.wait(ended_event_listed, "an ended event in the events view", EVENT_TIMEOUT_S)
    card = f'#events-list .event[data-event-id="{event_id}"]'

    dashboard.click(f"{card} button.delete")
    assert "delete" in dashboard.answer_confirm(accept=False).lower()
    assert dashboard.find_all(card), "the event went from the page although the deletion was cancelled"
    assert appliance.get(f"/api/v1/events/{event_id}").status_code == 200, "a cancelled deletion deleted the event"

    dashboard.click(f"{card} button.delete")
    dashboard.answer_confirm(accept=True)
    dashboard.wait(lambda _d: not dashboard.find_all(card), f"event {event_id} to leave the events view")
    assert appliance.get(f"/api/v1/events/{event_id}").status_code == 404, f"event {event_id} is still stored"
    assert appliance.get(f"/api/v1/events/{event_id}/snapshot.jpg").status_code == 404, "its snapshot is still served"


def test_a_camera_edit_in_the_form_is_applied_and_saved(dashboard, appliance):
    before = camera_config(appliance, EDIT_CAMERA)
    wanted = 3 if before["fps_limit"] != 3 else 4
    dashboard.select("select#edit-camera", EDIT_CAMERA)
    dashboard.wait(lambda _d: dashboard.find("input#edit-fps_limit").get_attribute("value") not in ("", None),
                   "the form to show the camera's settings")
    dashboard.type_into("input#edit-fps_limit", str(wanted))
    dashboard.find("button#edit-save").click()
    dashboard.wait(lambda _d: "saved" in dashboard.text("#edit-result").lower(), "the form to say saved")
    assert not dashboard.text("#edit-errors").strip(), dashboard.text("#edit-errors")
    after = camera_config(appliance, EDIT_CAMERA)
    assert after["fps_limit"] == wanted, f"the form said saved, the API shows {after}"
    assert {k: v for k, v in after.items() if k != "fps_limit"} == {k: v for k, v in before.items() if k != "fps_limit"}
    on_disk = yaml.safe_load(appliance.config_path.read_text())
    assert next(c for c in on_disk["cameras"] if c["id"] == EDIT_CAMERA)["fps_limit"] == wanted
    dashboard.screenshot("camera-edit.png", "#camera-edit")


def test_disabling_a_camera_in_the_form_stops_it_and_enabling_starts_it_again(dashboard, appliance):
    def state():
        response = appliance.get(f"/api/v1/cameras/{EDIT_CAMERA}")
        assert response.status_code == 200, response.text
        return response.json()["state"]
    dashboard.wait(lambda _d: state() == "streaming", f"{EDIT_CAMERA} to stream", 20)
    dashboard.select("select#edit-camera", EDIT_CAMERA)
    for enabled, wanted in ((False, "stopped"), (True, "streaming")):
        dashboard.wait(lambda _d: dashboard.find("input#edit-enabled").is_selected() != enabled,
                       "the form to show the camera's current setting")
        dashboard.set_checked("input#edit-enabled", enabled)
        dashboard.find("button#edit-save").click()
        dashboard.wait(lambda _d: camera_config(appliance, EDIT_CAMERA)["enabled"] is enabled,
                       f"enabled={enabled} in the configuration")
        dashboard.wait(lambda _d: state() == wanted, f"{EDIT_CAMERA} to be {wanted} in /api/v1/cameras/{EDIT_CAMERA}", 20)
        dashboard.wait(lambda _d: wanted in dashboard.camera_row(EDIT_CAMERA).text,
                       f"the camera table to show {EDIT_CAMERA} {wanted}")


@pytest.mark.parametrize("field, value, named", [
    ("fps_limit", "-1", "fps_limit"),
    ("source", "ftp://camera.invalid/stream", "source"),
])
def test_an_invalid_camera_edit_shows_the_error_and_changes_nothing(dashboard, appliance, console, field, value, named):
    before_config = appliance.get("/api/v1/config").json()
    before_file = appliance.config_path.read_text()
    # The refusal is a 400 answer, which Chromium logs as a failed request.
    console.allow(r"/api/v1/(cameras|config)\S* - Failed to load resource: the server responded with a status of 400")
    dashboard.select("select#edit-camera", EDIT_CAMERA)
    dashboard.wait(lambda _d: dashboard.find(f"input#edit-{field}").get_attribute("value") not in ("", None),
                   "the form to show the camera's settings")
    dashboard.type_into(f"input#edit-{field}", value)
    dashboard.find("button#edit-save").click()
    errors = dashboard.wait(lambda _d: dashboard.text("#edit-errors").strip(), "the form to show an error")
    assert named in errors, f"the error does not name {named}: {errors!r}"
    assert "saved" not in dashboard.text("#edit-result").lower()
    assert appliance.get("/api/v1/config").json() == before_config, "a refused edit changed the configuration"
    assert appliance.config_path.read_text() == before_file, "a refused edit changed the configuration file"


def test_a_camera_is_added_and_deleted_only_after_confirmation(dashboard, appliance):
    added = "garage"
    dashboard.type_into("input#add-id", added)
    dashboard.type_into("input#add-source", "test://box")
    dashboard.find("button#add-camera").click()
    dashboard.camera_row(added)
    assert camera_config(appliance, added)["source"] == "test://box"

    dashboard.select("select#edit-camera", added)
    dashboard.find("button#delete-camera").click()
    assert added in dashboard.answer_confirm(accept=False)
    assert added in {c["id"] for c in appliance.get("/api/v1/config").json()["cameras"]}, "a cancelled deletion deleted"

    dashboard.find("button#delete-camera").click()
    dashboard.answer_confirm(accept=True)
    dashboard.wait(lambda _d: not dashboard.find_all(f'#cameras tr[data-camera="{added}"]'), f"{added} to leave the camera table")
    cameras = {c["id"] for c in appliance.get("/api/v1/config").json()["cameras"]}
    assert cameras == {WALK_CAMERA, EDIT_CAMERA}, f"after deleting {added}: {cameras}"


def draw(dashboard, kind, name, points):
    """Pick the walking camera in the area editor and click ``points`` (fractions of the picture)."""
    from selenium.webdriver.common.action_chains import ActionChains

    dashboard.select("select#editor-camera", WALK_CAMERA)
    dashboard.loaded_picture("img#editor-snapshot", 30)
    dashboard.select("select#editor-kind", kind)
    dashboard.type_into("input#editor-name", name)
    canvas = dashboard.shown("svg#editor-canvas")
    # Selenium 4 offsets are from the centre of the part in view: have all of it in view.
    dashboard.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", canvas)
    width, height = canvas.size["width"], canvas.size["height"]
    assert width > 100 and height > 50, f"the editor canvas is {width}x{height}"
    actions = ActionChains(dashboard.driver)
    for x, y in points:
        actions.move_to_element_with_offset(canvas, round((x - 0.5) * width), round((y - 0.5) * height)).click()
    actions.perform()


def test_a_second_zone_of_the_same_name_is_refused_in_the_editor(dashboard, appliance, console):
    """Zone names are unique across the device: the editor shows the API's refusal."""
    before = appliance.get("/api/v1/config").json()
    console.allow(r"/api/v1/cameras/\S* - Failed to load resource: the server responded with a status of 400")
    draw(dashboard, "zone", ZONE, DRAWN_AREAS[0][2])
    dashboard.find("button#editor-save").click()
    errors = dashboard.wait(lambda _d: dashboard.text("#editor-errors").strip(), "the editor to show the refusal")
    assert ZONE in errors, f"the refusal does not name {ZONE!r}: {errors!r}"
    assert appliance.get("/api/v1/config").json() == before, "a refused drawing changed the configuration"


@pytest.mark.parametrize("kind, name, points", DRAWN_AREAS, ids=[a[0] for a in DRAWN_AREAS])
def test_an_area_drawn_with_the_mouse_is_saved_and_shown_on_the_live_view(dashboard, appliance, kind, name, points):
    key, shape = {"zone": ("zones", "polygon"), "line": ("lines", "points")}[kind]
    before = {a["name"] for a in camera_config(appliance, WALK_CAMERA)[key]}
    draw(dashboard, kind, name, points)
    if kind == "zone":
        dashboard.find("button#editor-finish").click()
        assert not dashboard.text("#editor-errors").strip(), dashboard.text("#editor-errors")
        dashboard.screenshot("editor.png", "#area-editor")
    dashboard.find("button#editor-save").click()
    dashboard.shown(f'#editor-areas li[data-area="{name}"]')

    def saved(_driver):
        return next((a for a in camera_config(appliance, WALK_CAMERA)[key] if a["name"] == name), None)
    area = dashboard.wait(saved, f"{kind} {name} in the configuration")
    assert not dashboard.text("#editor-errors").strip(), dashboard.text("#editor-errors")
    assert len(area[shape]) == len(points), area
    for got, want in zip(area[shape], points):
        assert got == pytest.approx(list(want), abs=POINT_TOLERANCE), f"drawn {points}, saved {area[shape]}"
    after = {a["name"] for a in camera_config(appliance, WALK_CAMERA)[key]}
    assert after == before | {name}, f"saving {kind} {name} changed the other {key}: {before} -> {after}"

    dashboard.view_live(WALK_CAMERA)
    element = "polygon[data-zone" if kind == "zone" else "line[data-line"
    assert_drawn_at(dashboard, f'svg#live-overlay {element}="{name}"]', points)


@pytest.mark.parametrize("labels, loitering, max_objects, refusal", [
    ("person", "20", "3", None),
    ("", "20", "", "loitering_s"),  # a loitering zone must name its labels: the refusal names the field
])
def test_a_zones_loitering_and_occupancy_rules_are_set_in_the_editor(dashboard, appliance, console, labels, loitering,
                                                                     max_objects, refusal):
    name = "bench" if refusal is None else "bench_unlabelled"
    before = appliance.get("/api/v1/config").json()
    if refusal:
        console.allow(r"/api/v1/cameras/\S* - Failed to load resource: the server responded with a status of 400")
    draw(dashboard, "zone", name, [(0.55, 0.55), (0.85, 0.55), (0.85, 0.85), (0.55, 0.85)])
    dashboard.type_into("input#editor-labels", labels)
    dashboard.type_into("input#editor-loitering", loitering)
    dashboard.type_into("input#editor-max-objects", max_objects)
    dashboard.find("button#editor-finish").click()
    dashboard.find("button#editor-save").click()
    if refusal:
        errors = dashboard.wait(lambda _d: dashboard.text("#editor-errors").strip(), "the editor to show the refusal")
        assert refusal in errors and "labels" in errors, errors
        assert appliance.get("/api/v1/config").json() == before, "a refused zone changed the configuration"
        return
    row = dashboard.shown(f'#editor-areas li[data-area="{name}"]')
    zone = dashboard.wait(lambda _d: next((z for z in camera_config(appliance, WALK_CAMERA)["zones"] if z["name"] == name),
                                          None), f"zone {name} in the configuration")
    assert (zone["labels"], zone["loitering_s"], zone["max_objects"]) == (["person"], 20.0, 3), zone
    assert "loitering after 20 s" in row.text and "alert above 3 inside" in row.text, row.text
    dashboard.click(f'#editor-areas li[data-area="{name}"] button.delete')
    dashboard.wait(lambda _d: all(z["name"] != name for z in camera_config(appliance, WALK_CAMERA)["zones"]),
                   f"zone {name} deleted")


def test_a_health_problem_shows_a_banner_until_it_clears(dashboard, appliance):
    def limit(disk_percent):
        answer = appliance.request("PATCH", "/api/v1/config", json={"health": {"limits": {"disk_percent": disk_percent}}})
        assert answer.status_code == 200, answer.text

    assert not dashboard.find("#health-banner").is_displayed()
    limit(0.1)  # any disk is fuller than this: a disk_full problem at the next sample
    try:
        dashboard.wait(lambda _d: dashboard.find("#health-banner").is_displayed(), "the health banner", timeout_s=20)
        assert "% full (limit 0.1 %)" in dashboard.text("#health-problems")
        dashboard.screenshot("health-banner.png", "#health-banner")
    finally:
        limit(90)
    dashboard.wait(lambda _d: not dashboard.find("#health-banner").is_displayed(), "the banner gone", timeout_s=20)


def test_a_motion_mask_drawn_with_the_mouse_is_saved_shown_and_deleted(dashboard, appliance):
    points = [(0.60, 0.10), (0.95, 0.10), (0.95, 0.40), (0.60, 0.40)]
    before = camera_config(appliance, WALK_CAMERA)["motion"]["masks"]
    draw(dashboard, "mask", "", points)
    dashboard.find("button#editor-finish").click()
    dashboard.find("button#editor-save").click()
    name = f"mask {len(before) + 1}"
    dashboard.shown(f'#editor-areas li[data-area="{name}"]')
    masks = dashboard.wait(lambda _d: (lambda m: m if len(m) == len(before) + 1 else None)(
        camera_config(appliance, WALK_CAMERA)["motion"]["masks"]), "the mask in the configuration")
    assert masks[:-1] == before
    for got, want in zip(masks[-1], points):
        assert got == pytest.approx(list(want), abs=POINT_TOLERANCE), f"drawn {points}, saved {masks[-1]}"
    assert camera_config(appliance, WALK_CAMERA)["motion"]["enabled"] is True  # the patch kept the rest of motion

    dashboard.view_live(WALK_CAMERA)
    assert_drawn_at(dashboard, f'svg#live-overlay polygon[data-mask="{name}"]', points)

    dashboard.click(f'#editor-areas li[data-area="{name}"] button.delete')
    dashboard.wait(lambda _d: camera_config(appliance, WALK_CAMERA)["motion"]["masks"] == before, "the mask deleted")


@pytest.mark.parametrize("name, points, refusal", [
    ("kerb", [(0.80, 0.10), (0.80, 0.90)], None),
    # crossing the camera's line "middle": refused at the field that names the pair
    ("across", [(0.20, 0.50), (0.90, 0.50)], "speed.to_line"),
])
def test_a_line_drawn_with_speed_fields_is_saved_with_its_pair(dashboard, appliance, console, name, points, refusal):
    """The editor's speed fields (static/speed.js): a line saved with its second line, distance,
    limit and unit; a pair whose lines cross is refused with the field named."""
    if refusal:
        console.allow(r"/api/v1/cameras/\S* - Failed to load resource: the server responded with a status of 400")
    before = appliance.get("/api/v1/config").json()
    draw(dashboard, "line", name, points)
    assert dashboard.find("#editor-speed").is_displayed(), "the speed fields are hidden while a line is drawn"
    dashboard.select("select#editor-speed-to", LINE)
    dashboard.type_into("input#editor-speed-distance", "12.5")
    dashboard.type_into("input#editor-speed-max", "40")
    dashboard.select("select#editor-speed-unit", "mph")
    dashboard.find("button#editor-save").click()
    if refusal:
        errors = dashboard.wait(lambda _d: dashboard.text("#editor-errors").strip(), "the editor to show the refusal")
        assert refusal in errors and "cross or touch" in errors, errors
        assert appliance.get("/api/v1/config").json() == before, "a refused pair changed the configuration"
        dashboard.find("button#editor-clear").click()
        dashboard.type_into("input#editor-speed-distance", "")
        dashboard.type_into("input#editor-speed-max", "")
        dashboard.select("select#editor-speed-to", "")
        return
    item = dashboard.shown(f'#editor-areas li[data-area="{name}"]')
    assert f"speed to {LINE} over 12.5 m, limit 40 km/h (mph)" in item.text, item.text
    line = next(a for a in camera_config(appliance, WALK_CAMERA)["lines"] if a["name"] == name)
    assert line["speed"] == {"to_line": LINE, "distance_m": 12.5, "max_kmh": 40.0, "unit": "mph"}, line
    item.find_element("css selector", "button.delete").click()
    dashboard.wait(lambda _d: not dashboard.find_all(f'#editor-areas li[data-area="{name}"]'), f"line {name} deleted")
    assert dashboard.find("input#editor-speed-distance").get_attribute("value") == "", "a saved line's speed stays"
    dashboard.select("select#editor-kind", "zone")
    assert dashboard.find("input#editor-speed-distance").is_displayed(), "a zone has no length field"
    assert not dashboard.find("select#editor-speed-to").is_displayed(), "a zone shows the second line"
    dashboard.select("select#editor-kind", "mask")
    assert not dashboard.find("#editor-speed").is_displayed(), "the speed fields show for a motion mask"


def test_a_zone_drawn_with_a_length_measures_speed(dashboard, appliance):
    name = "stretch"
    draw(dashboard, "zone", name, [(0.55, 0.55), (0.95, 0.55), (0.95, 0.95), (0.55, 0.95)])
    dashboard.find("button#editor-finish").click()
    dashboard.type_into("input#editor-speed-distance", "20")
    dashboard.find("button#editor-save").click()
    item = dashboard.shown(f'#editor-areas li[data-area="{name}"]')
    assert "speed over 20 m" in item.text, item.text
    zone = next(a for a in camera_config(appliance, WALK_CAMERA)["zones"] if a["name"] == name)
    assert zone["speed"] == {"distance_m": 20.0, "max_kmh": None, "unit": "kmh"}, zone
    item.find_element("css selector", "button.delete").click()
    dashboard.wait(lambda _d: not dashboard.find_all(f'#editor-areas li[data-area="{name}"]'), f"zone {name} deleted")
