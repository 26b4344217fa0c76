"""Inventory, events and offline detection with a real Mosquitto, on SQLite and PostgreSQL."""
from __future__ import annotations

import time

import pytest

from testkit.waiting import wait_for


def test_devices_cameras_stats_and_counts_reach_the_inventory(fleet_factory, sim_devices):
    fleet = fleet_factory()
    a = sim_devices(fleet.prefix, "edge-a", cameras=["front", "back"])
    sim_devices(fleet.prefix, "edge-b", cameras=["gate"])
    a.camera_state("back", "error", "cannot open the stream")
    a.stats(fps=12.5)
    a.publish("cameras/front/objects/person", {"count": 2, "ts": time.time()}, retain=True)
    a.publish("zones/driveway/car", {"count": 1, "ts": time.time()}, retain=True)
    a.publish("cameras/front/lines/gate", {"in": 3, "out": 1, "ts": time.time()}, retain=True)

    def settled(devices):
        cameras = {c["id"]: c["state"] for d in devices for c in d["cameras"]}
        # Every camera's state arrives on its own message: a device can be online before its cameras are known.
        return (len(devices) == 2 and all(d["state"] == "online" for d in devices) and cameras.get("back") == "error"
                and cameras.get("front") == "streaming" and cameras.get("gate") == "streaming")

    devices = wait_for(lambda: (lambda d: d if settled(d) else None)(fleet.get("/api/v1/devices").json()["devices"]),
                       10, "two devices online, their three cameras known, one in error")
    assert [d["device_id"] for d in devices] == ["edge-a", "edge-b"]
    assert {c["id"]: c["state"] for c in devices[0]["cameras"]} == {"back": "error", "front": "streaming"}
    assert devices[1]["cameras"] == [{"id": "gate", "state": "streaming", "error": None}]
    assert devices[0]["version"] == "0.0-sim"

    detail = wait_for(lambda: (lambda d: d if d.get("stats") and d["counts"]["lines"] else None)(fleet.device("edge-a")),
                      10, "stats and counts of edge-a")
    assert detail["stats"]["fps"] == 12.5
    assert detail["counts"] == {"cameras": {"front": {"person": 2}}, "zones": {"driveway": {"car": 1}},
                                "lines": {"gate": {"in": 3, "out": 1}}}
    assert [c["error"] for c in detail["cameras"] if c["id"] == "back"] == ["cannot open the stream"]
    assert fleet.get("/api/v1/devices/edge-nobody").status_code == 404
    assert fleet.get("/api/v1/devices?state=online").json()["devices"][1]["device_id"] == "edge-b"


def test_events_are_kept_with_their_latest_state_and_filtered(fleet_factory, sim_devices):
    fleet = fleet_factory()
    a = sim_devices(fleet.prefix, "edge-a")
    b = sim_devices(fleet.prefix, "edge-b", cameras=["gate"])
    t0 = time.time() - 100
    a.event("new", "ev-1", start_time=t0, zones=["driveway"])
    a.event("end", "ev-1", start_time=t0, end_time=t0 + 5, zones=["driveway"])
    a.event("new", "ev-2", label="car", start_time=t0 + 10)
    b.event("new", "ev-1", camera="gate", start_time=t0 + 20, zones=["dock_1"])  # same id, other device

    events = wait_for(lambda: (lambda e: e if len(e) == 3 and any(x["end_time"] for x in e) else None)(
        fleet.get("/api/v1/events").json()["events"]), 10, "three events, one ended")
    assert [(e["device_id"], e["id"]) for e in events] == [("edge-b", "ev-1"), ("edge-a", "ev-2"), ("edge-a", "ev-1")]
    assert events[2]["end_time"] == pytest.approx(t0 + 5)

    def ids(query: str):
        response = fleet.get("/api/v1/events" + query)
        assert response.status_code == 200, response.text
        return [(e["device_id"], e["id"]) for e in response.json()["events"]]

    assert ids("?device=edge-a") == [("edge-a", "ev-2"), ("edge-a", "ev-1")]
    assert ids("?label=car") == [("edge-a", "ev-2")]
    assert ids("?camera=gate") == [("edge-b", "ev-1")]
    assert ids("?zone=driveway") == [("edge-a", "ev-1")]
    assert ids("?zone=dock_1") == [("edge-b", "ev-1")]
    assert ids("?zone=dockX1") == []  # "_" is not a wildcard
    assert ids(f"?after={t0 + 5}&limit=1") == [("edge-b", "ev-1")]
    assert ids(f"?before={t0 + 5}") == [("edge-a", "ev-1")]


@pytest.mark.parametrize("query, word", [
    ("?limit=0", "limit"), ("?after=nan", "after"), ("?device=a/b", "device"), ("?zone=a%20b", "zone"),
])
def test_bad_event_filters_answer_400_naming_them(fleet_factory, query, word):
    fleet = fleet_factory()
    response = fleet.get("/api/v1/events" + query)
    assert response.status_code == 400
    assert word in response.json()["error"]


def test_a_crashed_device_shows_offline_at_once_and_a_clean_stop_too(fleet_factory, sim_devices):
    fleet = fleet_factory()
    crashed = sim_devices(fleet.prefix, "edge-crash")
    stopped = sim_devices(fleet.prefix, "edge-stop")
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=online").json()["devices"]) == 2, 10, "both online")
    crashed.kill()
    stopped.stop()
    began = time.monotonic()
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=offline").json()["devices"]) == 2, 5, "both offline")
    # The broker sends the will as soon as the connection drops, and the fleet writes it at once.
    assert time.monotonic() - began < 2.0


def test_a_hung_device_shows_offline_as_soon_as_the_broker_gives_up_on_it(fleet_factory, sim_devices, mosquitto_broker,
                                                                          mqtt_collector):
    fleet = fleet_factory()
    hung = sim_devices(fleet.prefix, "edge-hung", keepalive_s=5)
    wait_for(lambda: fleet.device("edge-hung").get("state") == "online", 10, "online")
    watcher = mqtt_collector(mosquitto_broker, f"{fleet.prefix}/edge-hung/status")
    hung.hang()
    began = time.monotonic()
    will = watcher.wait_for_message(match=lambda m: m.json()["state"] == "offline", timeout_s=20)
    wait_for(lambda: fleet.device("edge-hung").get("state") == "offline", 5, "offline after the last will")
    # The broker decides (1.5 keepalives, checked on its own schedule); the fleet follows within a second.
    assert time.monotonic() - will.received_monotonic_s < 1.0
    assert will.received_monotonic_s - began >= 5


@pytest.mark.parametrize("tail, payload", [
    ("status", b"not json"), ("status", b'{"state": "sideways"}'), ("events", b'{"type": "new", "after": {"id": 5}}'),
    ("cameras/cam1/state", b'{"state": "melting"}'), ("stats", b"[1, 2]"), ("config/reported", b'{"version": "x"}'),
    # a models_state that is not an object refuses the whole message: the status in it is not kept either
    ("status", b'{"state": "offline", "models_state": ["gate"]}'),
])
def test_hostile_messages_are_ignored_and_counted_without_harm(fleet_factory, sim_devices, tail, payload):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.device("edge-a").get("state") == "online", 10, "online")
    device._client.publish(f"{device.root}/{tail}", payload, qos=1).wait_for_publish(5)
    device.stats(fps=3.0)
    wait_for(lambda: (fleet.device("edge-a").get("stats") or {}).get("fps") == 3.0, 10, "later stats written")
    assert fleet.device("edge-a")["state"] == "online"
    assert fleet.get("/api/v1/status").json()["mqtt"]["rejected"] == 1


def test_the_clip_update_after_the_end_keeps_the_event_ended_and_adds_the_clip(fleet_factory, sim_devices):
    """With record.events on, one more ``update`` follows ``end`` once the clip is complete
    (docs/mqtt.md): its ``after`` is the ended event with the final clip_duration_s. The fleet
    keeps the event ended and shows the clip; it never reopens it."""
    fleet = fleet_factory()
    a = sim_devices(fleet.prefix, "edge-a")
    t0 = time.time() - 100
    a.event("new", "ev-1", start_time=t0)
    ended = a.event("end", "ev-1", start_time=t0, end_time=t0 + 5)
    ended.wait_for_publish(5)
    wait_for(lambda: [e for e in fleet.get("/api/v1/events").json()["events"] if e["end_time"]], 10, "the end")
    before = fleet.get("/api/v1/events").json()["events"][0]
    after = dict(before, has_clip=True, clip_duration_s=13.5)
    after.pop("device_id", None)
    a.publish("events", {"type": "update", "before": before, "after": after})

    events = wait_for(lambda: (lambda e: e if e and e[0].get("clip_duration_s") == 13.5 else None)(
        fleet.get("/api/v1/events").json()["events"]), 10, "the clip's update")
    assert len(events) == 1 and events[0]["end_time"] == pytest.approx(t0 + 5) and events[0]["has_clip"] is True
