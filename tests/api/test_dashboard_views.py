"""The dashboard's events, counts, zone and line editor and camera form, run by Node against the
real API: what the page shows, and what its edits did to the appliance's configuration."""
from __future__ import annotations

import copy
import threading
import time
from dataclasses import replace

import pytest

from edge_app.events.counts import LineTotals
from edge_app.events.model import Event
from edge_app.events.zone_stats import ZoneStats
from edge_app.reporting.protocol import ArtifactReport, CountsReport, EngineBuildReport
from tests.api.conftest import BASE_CONFIG, TOKEN, bus_detections
from tests.api.dashboard_page import run_dashboard

NOW = 1_800_000_000.0


def event(n: int, camera: str, label: str, start: float, **changes) -> Event:
    base = Event(id=f"{start:.3f}-{camera}-{n}", camera_id=camera, label=label, track_id=n, score=0.71,
                 top_score=0.87, box=(48.0, 399.0, 245.0, 903.0), frame_time=start + 2.0, start_time=start)
    return replace(base, **changes)


@pytest.fixture(params=["open", "token"])
def events_api(request, make_api, bus_jpg):
    """Three events, two of them with a snapshot and one with a clip, with and without an API token."""
    api = make_api({"api": {"token": TOKEN}} if request.param == "token" else None)
    api.token = TOKEN if request.param == "token" else ""
    api.service.add_event(event(1, "front", "person", NOW - 300, entered_zones=("driveway",)), bus_jpg.read_bytes())
    api.service.add_event(event(2, "front", "car", NOW - 200, end_time=NOW - 150), bus_jpg.read_bytes())
    api.service.add_event(event(3, "back", "person", NOW - 100))
    api.service.event_store.save_clip(f"{NOW - 300:.3f}-front-1", "front-1.mp4", 1000, 4.0)
    assert api.service.event_store.flush()
    return api


def test_the_events_view_lists_filters_opens_and_deletes_events(events_api):
    steps = run_dashboard(events_api, "events", events_api.token)
    loaded = steps["after_load"]
    newest_first = [f"{NOW - 100:.3f}-back-3", f"{NOW - 200:.3f}-front-2", f"{NOW - 300:.3f}-front-1"]
    assert [e["id"] for e in loaded["events"]] == newest_first
    # Snapshots come as blobs fetched with the token; an event without one gets a stand-in picture.
    assert [e["thumb"] for e in loaded["events"]] == ["data", "blob", "blob"]
    assert all(e["className"] == "event" for e in loaded["events"])
    assert "person on back" in loaded["events"][0]["text"] and "ongoing" in loaded["events"][0]["text"]
    assert "car on front · score 0.87" in loaded["events"][1]["text"]
    assert "zones: driveway" in loaded["events"][2]["text"]
    assert loaded["cameras"] == ["", "back", "front"] and loaded["labels"] == ["", "car", "person"]
    assert loaded["zones"] == ["", "driveway"]
    assert loaded["link"] == "online" and loaded["empty_note_hidden"] is True
    # One page of 50 holds them all: the count says so and there is nothing "More" could add.
    assert loaded["count"] == "· 3 of 3 events" and loaded["more_hidden"] is True
    assert loaded["clip_count"] == "1"

    filtered = steps["filtered"]
    assert filtered["query"] == "api/v1/events?label=car&limit=50"
    assert [e["id"] for e in filtered["events"]] == [newest_first[1]]
    assert filtered["count"] == "· 1 of 1 event" and filtered["clip_count"] == "1"

    assert steps["viewer"]["open"] is True and steps["viewer"]["src"] == "data"
    assert steps["viewer"]["caption"].startswith("person on back")
    assert steps["viewer_closed"] == {"open": False, "src": None}

    assert [e["id"] for e in steps["after_declined_delete"]["events"]] == newest_first
    assert [e["id"] for e in steps["after_delete"]["events"]] == newest_first[1:]
    assert len(steps["confirmations"]) == 2 and "person on back" in steps["confirmations"][0]
    assert f"DELETE api/v1/events/{newest_first[0]}" in steps["requested"]
    assert events_api.service.event(newest_first[0]) is None
    assert events_api.service.event(newest_first[1]) is not None
    assert not [path for path in steps["requested"] if "token" in path]


def test_the_counts_view_shows_cameras_zones_and_lines(api):
    api.service.live_counts = CountsReport(cameras={"front": {"person": 2, "car": 0}}, zones={"driveway": {"person": 1}},
                                           zone_stats={"driveway": ZoneStats(2, 42.7, 9, 1, 1, True)})
    api.service.event_store.save_line_counts("front", {"gate": LineTotals(3, 1)})
    assert api.service.event_store.flush()
    counts = run_dashboard(api, "counts")["counts"]
    assert counts["cameras"] == [
        {"data": {"countCamera": "front", "label": "car"}, "cells": {"count": "0"}},
        {"data": {"countCamera": "front", "label": "person"}, "cells": {"count": "2"}},
    ]
    assert counts["zones"] == [{"data": {"countZone": "driveway", "label": "person"}, "cells": {"count": "1"}}]
    assert counts["lines"] == [{"data": {"countLine": "gate"}, "cells": {"in": "3", "out": "1"}}]
    assert counts["zoneFigures"] == [{"data": {"zoneFigures": "driveway"}, "cells": {
        "inside": "2", "dwell": "42.7 s", "loitering": "1", "over": "over 1"}}]
    assert counts["link"] == "online"


def cameras_with_a_line_on_back() -> dict:
    cameras = copy.deepcopy(BASE_CONFIG["cameras"])
    cameras[1]["lines"] = [{"name": "door", "points": [[0, 0], [1, 1]]}]
    return {"cameras": cameras}


def test_the_area_editor_draws_saves_refuses_and_deletes_zones_and_lines(make_api):
    api = make_api(cameras_with_a_line_on_back())
    steps = run_dashboard(api, "areas")
    assert steps["overlay"] == []  # front has no zone yet
    assert steps["editor_cameras"] == ["", "front", "back"]
    assert steps["before_picking"]["picture"] == ""  # no snapshot before a camera is picked
    assert steps["after_picking"]["picture"] == "blob" and steps["after_picking"]["viewBox"] == "0 0 1600 900"
    assert steps["unfinished"]["drawing"][0]["tag"] == "polyline"
    finished = steps["finished"]["drawing"][0]
    assert finished["tag"] == "polygon" and finished["points"] == "160.0,450.0 960.0,450.0 960.0,900.0"

    assert steps["after_zone"]["errors"] == [] and steps["after_zone"]["result"] == "saved zone yard"
    assert steps["after_zone"]["areas"] == ["yard"]
    assert "A line needs 2 points" in steps["one_point_line"]["errors"][0]
    # Names are unique across the device: the API's refusal is shown, naming the field.
    refused = steps["duplicate_name"]["errors"]
    assert refused == ["cameras.1.lines.0.name: line name 'door' is already used by cameras.0.lines.0.name"]
    assert steps["after_line"]["errors"] == [] and steps["after_line"]["areas"] == ["yard", "gate"]
    overlay = {(s["tag"], s.get("data-zone") or s.get("data-line")) for s in steps["overlay_after"]}
    assert overlay == {("polygon", "yard"), ("line", "gate")}
    assert steps["after_delete"]["areas"] == ["gate"]
    assert [(s["tag"], s.get("data-line")) for s in steps["overlay_after_delete"]] == [("line", "gate")]
    assert steps["after_delete"]["link"] == "online"

    front = api.changes.current().camera("front")
    assert [z.name for z in front.zones] == []
    assert [(line.name, line.points, line.labels) for line in front.lines] == [
        ("gate", [(0.5, 0.0), (0.5, 1.0)], ["person", "car"])]  # the labels field keeps its text between saves
    assert [line.name for line in api.changes.current().camera("back").lines] == ["door"]
    assert steps["sent"][0] == {"request": "PATCH api/v1/cameras/front", "body": {
        "zones": [{"name": "yard", "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 1]], "labels": ["person", "car"]}]}}


def test_the_camera_form_edits_adds_and_deletes_cameras(api):
    steps = run_dashboard(api, "camera_edit")
    assert steps["on_load"]["camera"] == "front" and steps["on_load"]["cameras"] == ["front", "back"]
    assert steps["on_load"]["source"].startswith("rtsp://admin:***@")  # masked, and never sent back
    assert steps["back"] == {"camera": "back", "cameras": ["front", "back"], "source": "test://bars", "fps_limit": "0",
                             "enabled": True, "detect": True, "decoder": "auto", "errors": [], "result": "",
                             "link": "online"}
    assert steps["refused"]["result"] == "" and len(steps["refused"]["errors"]) == 1
    assert steps["refused"]["errors"][0].startswith("cameras.1.fps_limit: ")
    saved = steps["saved"]
    assert saved["result"] == "saved" and saved["errors"] == []
    assert (saved["fps_limit"], saved["detect"], saved["decoder"]) == ("5", False, "ffmpeg")
    assert steps["added"]["result"] == "added side" and steps["added"]["camera"] == "side"
    assert steps["added"]["cameras"] == ["front", "back", "side"]
    assert steps["added_twice"]["errors"] and "already exists" in steps["added_twice"]["errors"][0]
    assert steps["declined_delete"]["cameras"] == ["front", "back", "side"]
    assert steps["deleted"]["result"] == "deleted side" and steps["deleted"]["cameras"] == ["front", "back"]
    assert steps["confirmations"] == ["Delete camera side from the configuration?"] * 2

    config = api.changes.current()
    back = config.camera("back")
    assert (back.fps_limit, back.detect, back.decoder, back.enabled) == (5, False, "ffmpeg", True)
    assert config.camera("side") is None
    # The untouched front camera keeps its real password: the masked source was never sent back.
    assert "cam-s3cret" in config.camera("front").source


def test_the_configuration_editor_applies_a_merge_patch_and_keeps_edits_in_progress(api):
    steps = run_dashboard(api, "config_editor")
    assert steps["loaded_cameras"] == ["front", "back"]
    assert steps["applied"] == "Applied and saved."
    # Lists are replaced whole by a merge patch: the cameras list goes as the editor holds it.
    request, body = steps["sent"][0]["request"], steps["sent"][0]["body"]
    assert request == "PATCH api/v1/config" and list(body) == ["cameras"] and body["cameras"][1]["fps_limit"] == 3
    assert steps["camera_form"] == "saved"
    assert steps["device_id_in_editor"] == "renamed-but-not-applied"
    assert steps["after_reload"] == {"device_id": "edge-test", "fps_limits": [2, 3]}
    config = api.changes.current()
    assert (config.device_id, config.camera("front").fps_limit, config.camera("back").fps_limit) == ("edge-test", 2, 3)
    assert "cam-s3cret" in config.camera("front").source


def test_the_live_view_waits_for_a_new_frame_after_the_camera_form_restarted_its_camera(api, bus_image, tmp_path):
    # The appliance restarts an edited camera: its frame is gone (503) while its frame count stays.
    # The page must not ask for a snapshot until a new frame has been analysed.
    signal = tmp_path / "publish-now"

    def publish_when_signalled() -> None:
        deadline = time.monotonic() + 60
        while not signal.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        api.service.publish("front", bus_image, bus_detections())

    publisher = threading.Thread(target=publish_when_signalled, name="publish:front", daemon=True)
    publisher.start()
    steps = run_dashboard(api, "camera_restart", env={"DASHBOARD_SIGNAL_FILE": str(signal)})
    publisher.join(timeout=5)
    assert steps["before_edit"]["picture_frame"] == "1"
    assert steps["fetches_after_a_refused_edit"] > 0
    assert steps["saved"] == "saved" and api.changes.current().camera("front").fps_limit == 4
    assert steps["fetches_before_a_new_frame"] == 0
    assert steps["fetches_after_a_new_frame"] > 0 and steps["after_a_new_frame"]["picture_frame"] == "2"


def test_the_device_card_lists_each_model_with_its_cameras(make_api, model_path, int8_model_path):
    api = make_api({"models": [{"name": "parcels", "path": str(int8_model_path)}],
                    "cameras": [{"id": "front", "source": "test://bars"},
                                {"id": "back", "source": "test://bars", "model": "parcels"}]})
    facts = run_dashboard(api, "status_facts")["facts"]
    shown = dict(zip(facts[::2], facts[1::2]))
    assert "Model" not in shown, "several models: one line each instead of one for the first"
    assert shown["Model default"].startswith("running · onnxruntime · ") and "cameras front ·" in shown["Model default"]
    assert "cameras back ·" in shown["Model parcels"] and str(int8_model_path) in shown["Model parcels"]


def test_one_model_keeps_the_single_model_line(make_api):
    facts = run_dashboard(make_api(), "status_facts")["facts"]
    assert "Model" in facts[::2] and not any(name.startswith("Model ") for name in facts[::2])


def test_the_device_card_names_the_fleet_artifact_each_model_runs_and_its_engine_build(make_api, int8_model_path):
    api = make_api({"models": [{"name": "parcels", "path": str(int8_model_path)}],
                    "cameras": [{"id": "front", "source": "test://bars"},
                                {"id": "back", "source": "test://bars", "model": "parcels"}]})
    fallback = (f"fleet model gate version 1 is not running: it could not be fetched at start, so the local path "
                f"{int8_model_path} runs instead")
    api.service.model_status = {
        "default": {"artifact": ArtifactReport(name="people", version="3"),
                    "engine_build": EngineBuildReport(model="engines/fleet/people/3/model.onnx", state="building",
                                                      phase="Building engine", fraction=0.42, percent=42.0,
                                                      elapsed_s=75.0)},
        "parcels": {"fallback": fallback}}
    facts = run_dashboard(api, "status_facts")["facts"]
    shown = dict(zip(facts[::2], facts[1::2]))
    assert "fleet people version 3" in shown["Model default"], shown
    assert "engine build 42.0 % (Building engine)" in shown["Model default"], shown
    assert fallback in shown["Model parcels"] and "fleet " not in shown["Model parcels"].replace(fallback, ""), shown


def test_the_single_model_line_names_its_fleet_artifact(make_api):
    api = make_api()
    api.service.model_status = {"default": {"artifact": ArtifactReport(name="people", version="3")}}
    facts = run_dashboard(api, "status_facts")["facts"]
    shown = dict(zip(facts[::2], facts[1::2]))
    assert shown["Model"].endswith(" · fleet people version 3"), shown
