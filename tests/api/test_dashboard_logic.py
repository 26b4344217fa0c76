"""The dashboard's pure functions (static/logic.js), called in Node: coordinates, the bodies the
page sends, the error messages it shows and the queries it makes."""
from __future__ import annotations

import numpy as np
import pytest

from edge_app.track.lines import Line
from tests.api.dashboard_page import LogicCalls

RECT = {"left": 10, "top": 20, "width": 800, "height": 450}
GATE = [[0.5, 0.0], [0.5, 1.0]]  # the documented example: drawn top to bottom
DRIVEWAY = {"name": "driveway", "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 1.0]], "labels": []}


@pytest.fixture(scope="module")
def call_logic():
    calls = LogicCalls()
    yield calls
    calls.close()


SEGMENTS = [{"camera_id": "front", "start": 100, "end": 160, "bytes": 1}, {"camera_id": "front", "start": 161, "end": 220, "bytes": 1},
            {"camera_id": "front", "start": 500, "end": 560, "bytes": 1}, {"camera_id": "front", "start": 0, "end": 40, "bytes": 1}]
SPANS = [{"start": 20, "end": 40, "left": 0, "width": 0.02}, {"start": 100, "end": 220, "left": 0.08, "width": 0.12},
         {"start": 500, "end": 560, "left": 0.48, "width": 0.06}]


@pytest.mark.parametrize("function, args, expected", [
    # the timeline of [20, 1020]: touching segments merge, one before the window is cut to it
    ("timelineSpans", [SEGMENTS, 20, 1020, 2], SPANS),
    ("timelineSpans", [SEGMENTS, 20, 20, 2], []),
    ("playRange", [SPANS, 130, 600, 10], {"from": 130, "to": 220}),  # inside a span: from there to its end
    ("playRange", [SPANS, 510, 30, 10], {"from": 510, "to": 540}),  # at most the window
    ("playRange", [SPANS, 565, 600, 10], {"from": 500, "to": 560}),  # just beside a span: that span
    ("playRange", [SPANS, 300, 600, 10], None),  # nothing near
    ("cameraRecording", [{"cameras": [{"id": "a"}]}, "a"], None),  # an appliance from before recording
    ("cameraRecording", [{"record": {"events": {"enabled": True}, "continuous": {"enabled": False}},
                          "cameras": [{"id": "a", "record": {"continuous": True}}]}, "a"],
     {"events": True, "continuous": True}),
    ("cameraRecording", [{"record": {"events": {"enabled": True}}, "cameras": [{"id": "a", "record": {"enabled": False}}]}, "a"],
     {"events": False, "continuous": False}),
    ("recordingOn", [{"record": {"events": {"enabled": False}}, "cameras": [{"id": "a"}, {"id": "b", "record": {"enabled": True}}]}], True),
    ("recordingOn", [{"record": {"events": {"enabled": False}}, "cameras": [{"id": "a"}]}], False),
    ("recordingOn", [None], False),
    ("toPixel", [[0.5, 0.25], 1600, 900], [800, 225]),
    ("toPixel", [[0, 1], 640, 480], [0, 480]),
    ("toNormalised", [80, 45, 800, 450], [0.1, 0.1]),
    ("toNormalised", [1, 2, 3, 3], [0.3333, 0.6667]),  # rounded to 1/10000 of the frame
    ("toNormalised", [-5, 500, 800, 450], [0, 1]),  # a click on the border stays inside the frame
    ("toNormalised", [5, 5, 0, 450], None),  # a picture not laid out yet
    ("clickToNormalised", [90, 65, RECT], [0.1, 0.1]),
    ("clickToNormalised", [810, 470, RECT], [1, 1]),
    ("clickToNormalised", [410, 245, RECT], [0.5, 0.5]),
])
def test_coordinates(call_logic, function, args, expected):
    assert call_logic(function, *args) == expected


@pytest.mark.parametrize("point, size", [
    ([0.1234, 0.9876], [1920, 1080]),
    ([0.0, 1.0], [640, 480]),
    ([0.5, 0.3333], [810, 1080]),
])
def test_normalised_to_pixels_and_back_is_the_same_point(call_logic, point, size):
    pixel = call_logic("toPixel", point, *size)
    assert call_logic("toNormalised", *pixel, *size) == point


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("person", ["person"]),
    (" car, person ,,car", ["car", "person"]),
    ("traffic light, stop sign", ["traffic light", "stop sign"]),
])
def test_labels_from_the_text_field(call_logic, text, expected):
    assert call_logic("parseLabels", text) == expected


@pytest.mark.parametrize("kind, name, points, labels, expected", [
    ("zone", " yard ", [[0.1, 0.1], [0.5, 0.1], [0.5, 0.5]], "person",
     {"name": "yard", "polygon": [[0.1, 0.1], [0.5, 0.1], [0.5, 0.5]], "labels": ["person"]}),
    ("line", "gate", GATE, "", {"name": "gate", "points": GATE, "labels": []}),
    ("mask", "ignored", [[0, 0], [0.3, 0], [0.3, 0.2]], "person", {"polygon": [[0, 0], [0.3, 0], [0.3, 0.2]]}),
])
def test_the_area_being_drawn(call_logic, kind, name, points, labels, expected):
    assert call_logic("buildArea", kind, name, points, labels) == expected


@pytest.mark.parametrize("style, expected", [("blur", "blur"), ("black", "black"), ("<script>", "black"), (None, "black")])
def test_a_privacy_mask_being_drawn_has_a_style_and_nothing_else(call_logic, style, expected):
    points = [[0, 0], [0.3, 0], [0.3, 0.2]]
    assert call_logic("buildArea", "privacy", "ignored", points, "person", style) == {"polygon": points, "style": expected}


@pytest.mark.parametrize("loitering, max_objects, expected", [
    ("", "", {}),
    ("  ", None, {}),
    ("30", "", {"loitering_s": 30}),
    (" 2.5 ", "4", {"loitering_s": 2.5, "max_objects": 4}),
    ("", "0", {"max_objects": 0}),
    # not a number: sent as typed, so the API's refusal names the field
    ("soon", "many", {"loitering_s": "soon", "max_objects": "many"}),
])
def test_a_zones_loitering_and_occupancy_rules_from_the_editor(call_logic, loitering, max_objects, expected):
    assert call_logic("zoneRules", loitering, max_objects) == expected


@pytest.mark.parametrize("zone, expected", [
    (DRIVEWAY, ""),
    ({**DRIVEWAY, "loitering_s": 30, "max_objects": None}, "loitering after 30 s"),
    ({**DRIVEWAY, "loitering_s": None, "max_objects": 0}, "alert above 0 inside"),
    ({**DRIVEWAY, "loitering_s": 2.5, "max_objects": 4}, "loitering after 2.5 s · alert above 4 inside"),
])
def test_what_the_editors_list_says_of_a_zones_rules(call_logic, zone, expected):
    assert call_logic("zoneRulesText", zone) == expected


def test_the_zones_figures_in_the_counts_view(call_logic):
    counts = {"zone_stats": {
        "porch": {"occupancy": 0, "mean_dwell_s": None, "visits_last_hour": 0, "loitering": 0, "max_objects": None,
                  "over_capacity": False},
        "door": {"occupancy": 5, "mean_dwell_s": 42.7, "visits_last_hour": 9, "loitering": 1, "max_objects": 4,
                 "over_capacity": True}}}
    assert call_logic("zoneFigureRows", counts) == [
        {"zone": "door", "inside": "5", "meanDwell": "42.7 s", "loitering": "1", "alert": "over 4"},
        {"zone": "porch", "inside": "0", "meanDwell": "–", "loitering": "0", "alert": ""},
    ]
    assert call_logic("zoneFigureRows", {"cameras": {}}) == []  # an appliance from before zone figures


NEW_ZONE = {"name": "yard", "polygon": [[0, 0], [1, 0], [1, 1]], "labels": []}
NEW_LINE = {"name": "gate", "points": GATE, "labels": ["car"]}
TREE = [[0, 0], [0.3, 0], [0.3, 0.2]]
CLOCK = [[0.9, 0], [1, 0], [1, 0.1]]


@pytest.mark.parametrize("camera, kind, area, expected", [
    # The camera's whole list goes, with the new one last: a merge patch replaces lists whole.
    ({"id": "front", "zones": [DRIVEWAY], "lines": []}, "zone", NEW_ZONE, {"zones": [DRIVEWAY, NEW_ZONE]}),
    ({"id": "front"}, "zone", NEW_ZONE, {"zones": [NEW_ZONE]}),
    ({"id": "front", "zones": [DRIVEWAY], "lines": [NEW_LINE]}, "line", {**NEW_LINE, "name": "exit"},
     {"lines": [NEW_LINE, {**NEW_LINE, "name": "exit"}]}),
    # motion masks: the camera's whole list under motion (a merge patch keeps motion.enabled)
    ({"id": "front", "motion": {"enabled": True, "masks": [TREE]}}, "mask", {"polygon": CLOCK},
     {"motion": {"masks": [TREE, CLOCK]}}),
    ({"id": "front"}, "mask", {"polygon": TREE}, {"motion": {"masks": [TREE]}}),
    # privacy masks: the camera's whole list under privacy (a merge patch keeps privacy.detect)
    ({"id": "front", "privacy": {"detect": False, "masks": [{"polygon": TREE, "style": "blur"}]}}, "privacy",
     {"polygon": CLOCK, "style": "black"},
     {"privacy": {"masks": [{"polygon": TREE, "style": "blur"}, {"polygon": CLOCK, "style": "black"}]}}),
    ({"id": "front"}, "privacy", {"polygon": TREE, "style": "black"}, {"privacy": {"masks": [{"polygon": TREE, "style": "black"}]}}),
])
def test_the_patch_that_adds_an_area(call_logic, camera, kind, area, expected):
    assert call_logic("areaPatch", camera, kind, area) == expected


PRIVATE = {"privacy": {"masks": [{"polygon": TREE, "style": "black"}, {"polygon": CLOCK, "style": "blur"}]}}


@pytest.mark.parametrize("replacing, expected", [
    ("privacy mask 2", [{"polygon": TREE, "style": "black"}, {"polygon": GATE + [[0, 1]], "style": "black"}]),
    ("privacy mask 1", [{"polygon": GATE + [[0, 1]], "style": "black"}, {"polygon": CLOCK, "style": "blur"}]),
    ("privacy mask 9", [{"polygon": TREE, "style": "black"}, {"polygon": CLOCK, "style": "blur"},
                        {"polygon": GATE + [[0, 1]], "style": "black"}]),
], ids=["the last", "the first", "gone meanwhile: added"])
def test_an_edited_privacy_mask_keeps_its_place(call_logic, replacing, expected):
    edited = {"polygon": GATE + [[0, 1]], "style": "black"}
    assert call_logic("areaPatch", PRIVATE, "privacy", edited, replacing) == {"privacy": {"masks": expected}}


@pytest.mark.parametrize("camera, kind, name, expected", [
    ({"zones": [DRIVEWAY, NEW_ZONE]}, "zone", "driveway", {"zones": [NEW_ZONE]}),
    ({"zones": [DRIVEWAY], "lines": [NEW_LINE]}, "line", "gate", {"lines": []}),
    ({"zones": [DRIVEWAY]}, "zone", "unknown", {"zones": [DRIVEWAY]}),
    ({"motion": {"masks": [TREE, CLOCK]}}, "mask", "mask 1", {"motion": {"masks": [CLOCK]}}),
    ({"motion": {"masks": [TREE, CLOCK]}}, "mask", "mask 2", {"motion": {"masks": [TREE]}}),
    (PRIVATE, "privacy", "privacy mask 1", {"privacy": {"masks": [{"polygon": CLOCK, "style": "blur"}]}}),
])
def test_the_patch_that_removes_an_area(call_logic, camera, kind, name, expected):
    assert call_logic("areaRemovalPatch", camera, kind, name) == expected


def test_motion_masks_are_listed_after_zones_and_lines_by_their_place(call_logic):
    camera = {"zones": [DRIVEWAY], "lines": [NEW_LINE], "motion": {"masks": [TREE, CLOCK]}}
    assert [(a["kind"], a["name"]) for a in call_logic("cameraAreas", camera)] == [
        ("zone", "driveway"), ("line", "gate"), ("mask", "mask 1"), ("mask", "mask 2")]
    assert call_logic("cameraAreas", camera)[3]["points"] == CLOCK


def test_privacy_masks_are_listed_last_with_their_style(call_logic):
    camera = {"zones": [DRIVEWAY], "motion": {"masks": [TREE]}, **PRIVATE}
    areas = call_logic("cameraAreas", camera)
    assert [(a["kind"], a["name"]) for a in areas] == [
        ("zone", "driveway"), ("mask", "mask 1"), ("privacy", "privacy mask 1"), ("privacy", "privacy mask 2")]
    assert (areas[3]["points"], areas[3]["style"]) == (CLOCK, "blur")


@pytest.mark.parametrize("kind, points, finished, expected", [
    ("line", [[0, 0]], False, "A line needs 2 points"),
    ("line", GATE, False, ""),
    ("zone", GATE, True, "A zone needs at least 3 points."),
    ("zone", DRIVEWAY["polygon"], False, "Finish the zone first."),
    ("zone", DRIVEWAY["polygon"], True, ""),
    ("mask", GATE, True, "A motion mask needs at least 3 points."),
    ("mask", TREE, False, "Finish the motion mask first."),
    ("mask", TREE, True, ""),
    ("privacy", GATE, True, "A privacy mask needs at least 3 points."),
    ("privacy", TREE, False, "Finish the privacy mask first."),
    ("privacy", TREE, True, ""),
])
def test_what_a_drawing_still_lacks(call_logic, kind, points, finished, expected):
    problem = call_logic("drawingProblem", kind, points, finished)
    assert problem.startswith(expected) and (problem == "") == (expected == "")


@pytest.mark.parametrize("status, body, expected", [
    (400, {"error": "the configuration is invalid: ...", "details": [
        {"loc": "cameras.0.zones.1.name", "msg": "String should match pattern '^[A-Za-z0-9_-]{1,64}$'"},
        {"loc": "cameras.0.fps_limit", "msg": "Input should be greater than or equal to 0"}]},
     ["cameras.0.zones.1.name: String should match pattern '^[A-Za-z0-9_-]{1,64}$'",
      "cameras.0.fps_limit: Input should be greater than or equal to 0"]),
    (400, {"error": "x", "details": [{"loc": "", "msg": "camera id 'a' is used twice"}]}, ["camera id 'a' is used twice"]),
    (400, {"error": "x", "details": [
        {"loc": "cameras", "msg": "cameras.0.zones.2.name: zone name 'porch' is already used by cameras.0.zones.1.name"}]},
     ["cameras.0.zones.2.name: zone name 'porch' is already used by cameras.0.zones.1.name"]),
    (409, {"error": "a camera with id 'side' already exists"}, ["a camera with id 'side' already exists"]),
    (502, None, ["The request failed (HTTP 502)."]),
])
def test_the_messages_of_a_refused_request(call_logic, status, body, expected):
    assert call_logic("problemMessages", status, body) == expected


@pytest.mark.parametrize("filters, expected", [
    ({"camera": "", "label": "", "zone": ""}, "api/v1/events?limit=50"),
    ({"camera": "front", "label": "", "zone": "driveway"}, "api/v1/events?camera=front&zone=driveway&limit=50"),
    ({"label": "traffic light"}, "api/v1/events?label=traffic%20light&limit=50"),
    ({"label": "a&b=c"}, "api/v1/events?label=a%26b%3Dc&limit=50"),
])
def test_the_events_query_of_the_filters(call_logic, filters, expected):
    assert call_logic("eventsQuery", filters, 50) == expected


def test_the_events_query_of_a_later_page(call_logic):
    assert call_logic("eventsQuery", {"camera": "front"}, 100, 500) == "api/v1/events?camera=front&limit=100&offset=500"
    assert call_logic("eventsQuery", {"camera": "front"}, 100, 0) == "api/v1/events?camera=front&limit=100"


def test_count_rows_are_sorted_and_keyed(call_logic):
    rows = call_logic("countRows", {"cameras": {"front": {"person": 2, "car": 0}, "back": {"dog": 1}},
                                    "zones": {"driveway": {"person": 1}}, "lines": {"gate": {"in": 3, "out": 1}}})
    assert [(r["owner"], r["label"], r["count"]) for r in rows["cameras"]] == [("back", "dog", 1), ("front", "car", 0),
                                                                               ("front", "person", 2)]
    assert [(r["owner"], r["label"], r["count"]) for r in rows["zones"]] == [("driveway", "person", 1)]
    assert [(r["owner"], r["in"], r["out"]) for r in rows["lines"]] == [("gate", 3, 1)]
    assert len({r["key"] for r in rows["cameras"]}) == 3
    assert call_logic("countRows", {}) == {"cameras": [], "zones": [], "lines": []}


def engine_side(points, point) -> str:
    """The side of the line P1 -> P2 a normalised point is on, by the engine's own rule (s > 0: "in")."""
    s = Line("gate", tuple(points[0]), tuple(points[1])).signed(np.array([point], dtype=float))[0]
    return "in" if s > 0 else "out" if s < 0 else "on"


@pytest.mark.parametrize("point, side", [
    ([0.25, 0.5], "in"),  # docs/configuration.md: moving from the right half to the left half is "in"
    ([0.75, 0.5], "out"),
    ([0.5, 0.2], "on"),
])
def test_the_side_of_a_line(call_logic, point, side):
    assert engine_side(GATE, point) == side


@pytest.mark.parametrize("points, size", [
    (GATE, [1600, 900]),
    ([[0.5, 1.0], [0.5, 0.0]], [1600, 900]),  # drawn bottom to top: "in" is on the right
    ([[0.1, 0.2], [0.9, 0.3]], [640, 480]),
    ([[0.9, 0.9], [0.2, 0.1]], [810, 1080]),
])
def test_the_in_arrow_points_to_the_in_side(call_logic, points, size):
    geometry = call_logic("lineGeometry", points, *size)
    start = call_logic("toNormalised", *geometry["inFrom"], *size)
    end = call_logic("toNormalised", *geometry["inTo"], *size)
    label = call_logic("toNormalised", *geometry["inLabel"], *size)
    assert engine_side(points, start) == "out"
    assert engine_side(points, end) == "in" and engine_side(points, label) == "in"
    assert geometry["head"][0] == call_logic("toPixel", points[1], *size)  # the arrow head is at P2
    assert geometry["inHead"][0] == geometry["inTo"]
    for corner in geometry["inHead"][1:]:  # the base of its head, behind the tip, is still on the "in" side
        assert engine_side(points, call_logic("toNormalised", *corner, *size)) == "in"


FRONT = {"id": "front", "source": "rtsp://admin:***@10.0.0.5:554/stream1", "enabled": True, "fps_limit": 0,
         "decoder": "auto", "detect": True}
UNCHANGED = {"source": FRONT["source"], "enabled": True, "detect": True, "fps_limit": "0", "decoder": "auto"}


@pytest.mark.parametrize("camera, form, expected", [
    (FRONT, UNCHANGED, {}),  # nothing sent, the masked source least of all
    (FRONT, {**UNCHANGED, "fps_limit": "5"}, {"fps_limit": 5}),
    (FRONT, {**UNCHANGED, "fps_limit": " 2.5 "}, {"fps_limit": 2.5}),
    (FRONT, {**UNCHANGED, "fps_limit": "abc"}, {"fps_limit": "abc"}),  # the API names the field
    (FRONT, {**UNCHANGED, "fps_limit": ""}, {"fps_limit": ""}),
    (FRONT, {**UNCHANGED, "detect": False, "decoder": "nvdec"}, {"detect": False, "decoder": "nvdec"}),
    (FRONT, {**UNCHANGED, "source": "test://bars"}, {"source": "test://bars"}),
    ({"id": "old", "source": "test://bars"}, {**UNCHANGED, "source": "test://bars"}, {}),  # defaults of missing keys
])
def test_the_camera_form_patch_holds_only_what_changed(call_logic, camera, form, expected):
    assert call_logic("cameraPatch", camera, form) == expected


def test_the_camera_form_is_filled_with_the_defaults_of_missing_keys(call_logic):
    assert call_logic("cameraForm", {"id": "old", "source": "test://bars"}) == {
        "source": "test://bars", "enabled": True, "detect": True, "fps_limit": "0", "decoder": "auto"}


@pytest.mark.parametrize("before, after, expected", [
    ({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 2, "d": 4}}, {"b": {"d": 4}}),
    ({"a": 1, "b": 2}, {"a": 1}, {"b": None}),
    ({"cameras": [{"id": "x"}]}, {"cameras": [{"id": "x", "fps_limit": 2}]}, {"cameras": [{"id": "x", "fps_limit": 2}]}),
    ({"a": [1]}, {"a": [1]}, {}),
])
def test_the_merge_patch_of_the_configuration_editor(call_logic, before, after, expected):
    assert call_logic("mergeDiff", before, after) == expected


def test_filter_options_start_with_every_value(call_logic):
    assert call_logic("filterOptions", ["person", "car", "person", ""], "every label") == [
        {"value": "", "text": "every label"}, {"value": "car", "text": "car"}, {"value": "person", "text": "person"}]


@pytest.mark.parametrize("current, cameras, expected", [
    (None, ["demo"], "demo"),  # the only camera is shown without a click
    (None, ["front", "back"], None),  # with several, the viewer waits to be asked (each view costs JPEG encodes)
    (None, [], None),
    ("back", ["front", "back"], "back"),
    ("gone", ["demo"], "demo"),  # the camera viewed was deleted: the one left is shown
    ("demo", ["demo"], "demo"),
])
def test_the_camera_the_viewer_shows(call_logic, current, cameras, expected):
    assert call_logic("cameraToView", current, cameras) == expected


COUNTS = {"frames_captured": 40, "frames_analyzed": 7}


@pytest.mark.parametrize("camera, config, expected", [
    (COUNTS, {"id": "x"}, 7),  # detecting by default: its analysed frames
    (COUNTS, {"id": "x", "detect": True}, 7),
    (COUNTS, {"id": "x", "detect": False}, 40),  # the snapshot is its newest captured frame
    ({"frames_captured": 0, "frames_analyzed": 7}, {"id": "x", "detect": False}, 0),  # restarted: none captured yet
    (COUNTS, None, 7),  # before the configuration has loaded
    ({}, {"id": "x", "detect": False}, 0),
    ({**COUNTS, "detect": False}, {"id": "x", "detect": True}, 40),  # a profile switched it off
    ({**COUNTS, "detect": True}, {"id": "x", "detect": False}, 7),  # a profile switched it on
])
def test_the_frames_a_camera_snapshot_can_show(call_logic, camera, config, expected):
    assert call_logic("pictureCount", camera, config) == expected


@pytest.mark.parametrize("camera, config, expected", [
    ({"detect": False}, {"id": "x", "detect": True}, False),  # the report (the profile in force) decides
    ({"detect": True}, {"id": "x", "detect": False}, True),
    ({}, {"id": "x", "detect": False}, False),  # an appliance from before the report said: the configuration
    ({}, {"id": "x"}, True),
    (None, None, True),
    ({"detect": "no"}, {"id": "x", "detect": False}, False),  # not a boolean: the configuration
])
def test_whether_a_camera_detects(call_logic, camera, config, expected):
    assert call_logic("detecting", camera, config) is expected


ITEMS = [{"id": "a", "severity": "alert", "start_time": 100, "end_time": 200},
         {"id": "b", "severity": "detection", "start_time": 900, "end_time": None},  # ongoing: up to the window's end
         {"id": "c", "severity": "alert", "start_time": 0, "end_time": 50},  # before the window: cut to it
         {"id": "d", "severity": "alert", "start_time": 0, "end_time": 10}]  # ended before it: not shown


@pytest.mark.parametrize("function, args, expected", [
    ("timelineMarks", [ITEMS, 20, 1020], [
        {"id": "a", "severity": "alert", "start": 100, "left": 0.08, "width": 0.1},
        {"id": "b", "severity": "detection", "start": 900, "left": 0.88, "width": 0.12},
        {"id": "c", "severity": "alert", "start": 0, "left": 0, "width": 0.03}]),
    ("timelineMarks", [ITEMS, 20, 20], []),
    # a range dragged either way, cut to the longest export
    ("selectionRange", [500, 200, 3600], {"from": 200, "to": 500, "cut": False}),
    ("selectionRange", [0, 7200, 3600], {"from": 0, "to": 3600, "cut": True}),
])
def test_the_timeline(call_logic, function, args, expected):
    assert call_logic(function, *args) == expected


def label(x1, y1, x2, y2, w=60, h=20):
    return {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "w": w, "h": h}


def overlapping(rects):
    return [(a, b) for i, a in enumerate(rects) for b in rects[i + 1:]
            if a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]]


@pytest.mark.parametrize("labels, first", [
    ([label(100, 100, 200, 300)], {"x": 100, "y": 80, "w": 60, "h": 20}),  # above its box
    ([label(100, 5, 200, 300)], {"x": 100, "y": 5, "w": 60, "h": 20}),  # no room above: inside its top
    ([label(600, 100, 700, 300)], {"x": 580, "y": 80, "w": 60, "h": 20}),  # kept inside the picture
    # three people side by side, their boxes overlapping: the labels stack instead of covering
    ([label(100, 100, 200, 300), label(110, 102, 210, 300), label(120, 98, 220, 300)], {"x": 100, "y": 80, "w": 60, "h": 20}),
    ([label(100, 100, 200, 300)] * 6, {"x": 100, "y": 80, "w": 60, "h": 20}),
    ([label(100, 460, 200, 479)] * 3, {"x": 100, "y": 440, "w": 60, "h": 20}),  # at the bottom edge: stacked upwards
])
def test_box_labels_never_hide_each_other(call_logic, labels, first):
    placed = call_logic("placeLabels", labels, 640, 480)
    assert placed[0] == first
    assert not overlapping(placed)
    assert all(0 <= r["x"] <= 640 - r["w"] and 0 <= r["y"] <= 480 - r["h"] for r in placed)


TRACK = [[1.0, 0.1, 0.1, 0.3, 0.5], [2.0, 0.3, 0.1, 0.5, 0.5]]


@pytest.mark.parametrize("t_s, expected", [
    (1.5, [0.2, 0.1, 0.4, 0.5]),  # half way: half way between the two boxes
    (1.0, [0.1, 0.1, 0.3, 0.5]),
    (0.8, [0.1, 0.1, 0.3, 0.5]),  # just before the first: held there
    (2.4, [0.3, 0.1, 0.5, 0.5]),  # just after the last: held there
    (0.4, None),  # the clip's time before the event: no box
    (2.6, None),
])
def test_the_box_of_a_track_at_a_time(call_logic, t_s, expected):
    assert call_logic("trackBoxAt", TRACK, t_s, 0.5) == expected
    assert call_logic("trackBoxAt", [], t_s, 0.5) is None


@pytest.mark.parametrize("event, expected", [
    ({"type": "object", "label": "person"}, "person"),
    ({"label": "car"}, "car"),  # an event stored before types
    ({"type": "loitering", "label": "person"}, "person loitering"),
    ({"type": "occupancy", "label": "person",
      "occupancy": {"objects": {"person": 2}, "count": 2, "peak_objects": 4, "max_objects": 3}}, "person occupancy 4 > 3"),
])
def test_event_titles_say_what_a_zone_noticed(call_logic, event, expected):
    assert call_logic("eventTitle", event) == expected
