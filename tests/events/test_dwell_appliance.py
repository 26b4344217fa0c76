"""Dwell and loitering through the running appliance (in-process): a real H.264 clip (the two people
of zidane.jpg standing for 4 s, then an empty grey picture), the real YOLOv8n on ONNX Runtime, the
real pipeline, a real Mosquitto and the event database. What a subscriber and the REST side see:
``dwell_s`` on the people's events, a loitering event per person, an occupancy event of the zone
(two people inside, ``max_objects: 1``), each zone event with its snapshot, the zone's figures
(occupancy, the occupancy alert, mean dwell) and the Home Assistant entities of the zone."""
from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import parse_config
from edge_app.events.query import EventQuery
from edge_app.events.store import EventStore
from tests.support.media import image_size, make_clip

pytestmark = pytest.mark.slow

ROOT = "edge_app/dwell"
ZONE = "pitch"
STAND_S = 6.0  # the people are in the clip this long (60 frames)
LOITERING_S = 0.5


@pytest.fixture(scope="module")
def standing_clip(tmp_path_factory, zidane_jpg):
    folder = tmp_path_factory.mktemp("standing")
    width, height = image_size(zidane_jpg)
    empty = folder / "empty.jpg"
    cv2.imwrite(str(empty), np.full((height, width, 3), 128, np.uint8))
    return make_clip([zidane_jpg, empty], folder / "standing.mp4", seconds_per_image=STAND_S, size=(width, height))


def _config(model_path, tmp_path, clip, broker):
    return parse_config({
        "device_id": "dwell",
        # Every frame analysed, none dropped however busy the machine (capture times then follow
        # the analysis, so what to expect is read from the detections published).
        "cameras": [{"id": "cam", "source": str(clip), "realtime": False, "zones": [
            {"name": ZONE, "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]], "labels": ["person"],
             "loitering_s": LOITERING_S, "max_objects": 1}]}],
        "model": {"path": str(model_path), "engine_dir": str(tmp_path / "engines")},
        "mqtt": {"host": broker.host, "port": broker.port},
        "api": {"enabled": False, "allow_unsafe_sources": True},
        "motion": {"enabled": False},
        "events": {"dir": str(tmp_path / "events"), "end_after_s": 1.0},
        "homeassistant": {"enabled": True},
    })


def test_dwell_loitering_and_zone_figures_on_mqtt_and_in_the_event_database(
        model_path, tmp_path, standing_clip, mosquitto_broker, mqtt_collector):
    collector = mqtt_collector(mosquitto_broker, [f"{ROOT}/#", "homeassistant/#"])
    config = _config(model_path, tmp_path, standing_clip, mosquitto_broker)
    store = EventStore(tmp_path / "events")
    appliance = Appliance(config, event_store=store)
    appliance.start()
    try:
        def ends():
            bodies = [m.json() for m in collector.messages(f"{ROOT}/events")]
            people = [b["after"] for b in bodies if b["type"] == "end" and b["after"]["label"] == "person"]
            done = sum(1 for e in people if e["type"] == "loitering") >= 2 and any(e["type"] == "occupancy" for e in people)
            return people if done else None
        collector.wait_until(ends, 240, "the loitering events of both people and the occupancy event to end")
        collector.wait_until(lambda: _zone(collector)[-1]["occupancy"] == 0 and _zone(collector)[-1]["mean_dwell_s"],
                             10, "the zone empty again, with its mean dwell")
    finally:
        appliance.stop()
    messages = [m.json() for m in collector.messages(f"{ROOT}/events")]
    people = {}
    for body in messages:
        if body["after"]["label"] == "person":
            people.setdefault(body["after"]["id"], []).append(body)
    objects = {i: h for i, h in people.items() if h[-1]["after"]["type"] == "object"}
    loitering = {i: h for i, h in people.items() if h[-1]["after"]["type"] == "loitering"}
    occupancy = {i: h for i, h in people.items() if h[-1]["after"]["type"] == "occupancy"}
    assert len(objects) == 2 and len(loitering) == 2 and len(occupancy) == 1, json.dumps(messages)[:3000]

    # dwell_s on the people's updates and ends: from the first to the last frame that showed them with their track
    seen = {}
    for frame in collector.payloads(f"{ROOT}/cameras/cam/detections"):
        for detection in frame["detections"]:
            if detection["label"] == "person" and detection["track_id"] >= 0:
                first, _ = seen.get(detection["track_id"], (frame["ts"], None))
                seen[detection["track_id"]] = (first, frame["ts"])
    for history in objects.values():
        # (the people stand still: their updates are a better snapshot or score, if any)
        assert all(ZONE in b["after"]["dwell_s"] for b in history if ZONE in b["after"]["current_zones"]), history
        end = history[-1]
        assert end["type"] == "end" and ZONE in end["after"]["entered_zones"]
        first_s, last_s = seen[end["after"]["track_id"]]
        assert end["after"]["dwell_s"][ZONE] == pytest.approx(last_s - first_s, abs=0.02), (end, first_s, last_s)
    # a loitering event per person: new once past loitering_s, end with the visit's whole dwell
    for history in loitering.values():
        assert [b["type"] for b in history] == ["new", "end"], history
        new, end = history[0]["after"], history[-1]["after"]
        assert new["current_zones"] == [ZONE] and LOITERING_S <= new["dwell_s"][ZONE] < STAND_S
        person = next(h[-1]["after"] for h in objects.values() if h[-1]["after"]["track_id"] == end["track_id"])
        assert end["dwell_s"][ZONE] == pytest.approx(person["dwell_s"][ZONE], abs=0.02)
        assert end["end_time"] - end["start_time"] == pytest.approx(end["dwell_s"][ZONE], abs=0.02)
        assert new["has_snapshot"] and end["has_snapshot"], history
    # the zone's occupancy event: new with both people inside, end once the first of them is gone
    (crowd,) = occupancy.values()
    assert [b["type"] for b in crowd] == ["new", "end"], crowd
    new, end = crowd[0]["after"], crowd[-1]["after"]
    assert (new["track_id"], new["current_zones"], new["has_snapshot"]) == (-1, [ZONE], True), new
    assert new["occupancy"] == {"objects": {"person": 2}, "count": 2, "peak_objects": 2, "max_objects": 1}, new
    assert end["occupancy"]["count"] <= 1 and end["occupancy"]["peak_objects"] == 2 and end["end_time"] >= new["start_time"]

    # the zone's retained figures: both inside (over max_objects: 1), both loitering, then empty
    figures = _zone(collector)
    assert any(f["occupancy"] == 2 and f["over_capacity"] and f["max_objects"] == 1 for f in figures), figures
    assert any(f["loitering"] == 2 for f in figures), figures
    last = figures[-1]
    assert (last["occupancy"], last["over_capacity"], last["loitering"], last["visits_last_hour"]) == (0, False, 0, 2)
    ends = [h[-1]["after"]["dwell_s"][ZONE] for h in objects.values()]
    assert last["mean_dwell_s"] == pytest.approx(sum(ends) / 2, abs=0.06)

    # Home Assistant: the zone's occupancy and loitering entities read that topic
    discovery = collector.messages("homeassistant/device/dwell/config")[-1].json()
    on_zone = {body["name"] for body in discovery["cmps"].values() if body.get("state_topic") == f"{ROOT}/zones/{ZONE}"}
    assert {f"{ZONE} occupancy", f"{ZONE} loitering", f"{ZONE} over capacity", f"{ZONE} mean dwell"} <= on_zone

    # the event database (GET /api/v1/events) keeps type and dwell
    stored = {e.id: e for e in appliance.reads.events(EventQuery(camera="cam", zone=ZONE))}
    snapshots = {event_id: store.snapshot(event_id) for event_id in set(loitering) | set(occupancy)}
    store.close()
    assert set(objects) | set(loitering) | set(occupancy) <= set(stored)
    assert all(jpeg is not None and jpeg[:2] == b"\xff\xd8" for jpeg in snapshots.values()), snapshots.keys()
    for event_id, history in occupancy.items():
        assert stored[event_id].type == "occupancy" and stored[event_id].to_dict()["occupancy"] == history[-1]["after"]["occupancy"]
    for event_id in loitering:
        assert stored[event_id].type == "loitering"
        assert stored[event_id].dwell_s[ZONE] == pytest.approx(loitering[event_id][-1]["after"]["dwell_s"][ZONE], abs=0.01)


def _zone(collector):
    return [m.json() for m in collector.messages(f"{ROOT}/zones/{ZONE}")]
