"""``bench.fleet sim`` speaks the appliance's contract: 20 simulated appliances and a real ``edge-app run``
on one real Mosquitto, their topics and payload shapes compared kind by kind.

The real appliance loops a clip of bus.jpg (people and a bus: events and counts) with tracking
and events on; both get a desired configuration. Payload shapes are compared as nested key sets,
and checked against the field lists of docs/mqtt.md, so a builder drifting from the contract fails too.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from typing import Any, Dict

import paho.mqtt.publish as mqtt_publish
import pytest

from bench.fleet.device import bench_desired_key
from edge_app.fleet_protocol.desired_signature import signed_desired
from testkit.waiting import wait_until
from tests.e2e.conftest import appliance_factory  # noqa: F401  (a fixture: a real `edge-app run`)

DEVICES, KILL = 20, 3
REAL_KEY = "e2e-desired-key-0123456789abcdef01"
EPOCH = "be" * 16
SPEC_KEYS = {
    "status": {"state", "device_id", "version", "ts"},
    "cameras/+/state": {"state", "ts", "error"},
    "events": {"type", "before", "after"},
    "cameras/+/objects/+": {"count", "ts", "model"},
    "config/reported": {"version", "status", "errors", "ts"},
}
STATS_KEYS = {"fps", "latency_ms", "queue", "dropped"}
EVENT_KEYS = {"id", "camera_id", "label", "track_id", "score", "top_score", "box", "frame_time", "start_time",
              "end_time", "current_zones", "entered_zones", "has_snapshot", "model", "has_clip", "clip_duration_s",
              "type", "dwell_s", "speed_kmh", "speed_alert", "occupancy"}


def signed(key: str, device: str, version: int, patch: Dict[str, Any]) -> str:
    """A desired message as the fleet service sends it to an appliance with ``fleet.desired_key``."""
    return json.dumps(signed_desired(key, device, EPOCH, int(time.time() * 1000), version, patch))


def kind_of(topic: str, root: str) -> str:
    """The topic relative to the device root, with camera ids and labels as '+'."""
    rest = topic[len(root) + 1:]
    rest = re.sub(r"^cameras/[^/]+/", "cameras/+/", rest)
    return re.sub(r"^cameras/\+/objects/[^/]+$", "cameras/+/objects/+", rest)


def shape(value: Any) -> Any:
    """Nested key sets: what two payloads of the same kind must share (values differ)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    return None


def by_kind(collector, root: str) -> Dict[str, list]:
    kinds = defaultdict(list)
    for message in collector.messages(f"{root}/#"):
        kinds[kind_of(message.topic, root)].append(message)
    return kinds


def sample_stats_shape(body: Dict[str, Any]) -> Any:
    cameras = body.get("cameras", {})
    return {**shape(body), "cameras": shape(next(iter(cameras.values()))) if cameras else None}


@pytest.mark.slow
def test_simulated_appliances_speak_the_real_appliances_contract(
        repo_root, mosquitto_broker, mqtt_collector, appliance_factory, model_path, bus_clip, tmp_path):
    collector = mqtt_collector(mosquitto_broker, "edge_app/#")
    real = appliance_factory(
        [{"id": "bus", "source": str(bus_clip), "loop": True}], model_path, mosquitto_broker,
        mqtt={"stats_interval_s": 1}, tracking={"enabled": True}, fleet={"remote_config": True, "desired_key": REAL_KEY},
        events={"enabled": True, "dir": str(tmp_path / "events"), "min_frames": 2, "snapshots": False})
    real_root = "edge_app/e2e"
    collector.wait_for_message(f"{real_root}/events", timeout_s=90)
    patch = {"model": {"conf_threshold": 0.3}}
    mqtt_publish.single(f"{real_root}/config/desired", signed(REAL_KEY, "e2e", 1, patch), qos=1, retain=True,
                        hostname=mosquitto_broker.host, port=mosquitto_broker.port)

    sim = subprocess.Popen(
        [sys.executable, "-m", "bench.fleet", "sim", "--broker", f"{mosquitto_broker.host}:{mosquitto_broker.port}",
         "--prefix", "edge_app", "--devices", str(DEVICES), "--cameras", "4", "--duration-s", "12",
         "--stats-interval-s", "2", "--event-period-s", "5", "--kill", str(KILL), "--kill-at-s", "8",
         "--rollout-at-s", "5", "--rollout-invalid", "2"],
        cwd=repo_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        collector.wait_for_count(DEVICES, "edge_app/+/status", timeout_s=20)
        for device, body in (("sim-0000", patch),
                             ("sim-0001", {"cameras": [{"id": "x", "source": "rtsp://h/s", "fps_limit": -1}]})):
            mqtt_publish.single(f"edge_app/{device}/config/desired", signed(bench_desired_key(device), device, 1, body),
                                qos=1, retain=True,
                                hostname=mosquitto_broker.host, port=mosquitto_broker.port)
        # The last wills of the killed appliances arrive while the simulator still runs.
        offline = lambda: [m for m in collector.messages("edge_app/+/status") if m.json()["state"] == "offline"]  # noqa: E731
        wait_until(lambda: len(offline()) >= KILL, 11, "the last wills of the killed appliances")
        assert sim.poll() is None, "the simulator ended before the kill was observed"
        willed = {m.json()["device_id"] for m in offline()}
        out, err = sim.communicate(timeout=60)
    finally:
        if sim.poll() is None:
            sim.kill()
    assert sim.returncode == 0, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    real.terminate()

    assert (summary["devices"], summary["killed"], summary["wills_seen"], summary["errors"]) == (DEVICES, KILL, KILL, 0), summary
    assert summary["messages_sent"] > 0 and summary["messages_per_s"] > 0 and summary["connect_s"] is not None
    assert willed == set(summary["killed_ids"])
    # Two desired messages from the test, then a rollout to all 20 (2 of them with a refused patch).
    assert summary["desired_handled"] == 2 + DEVICES, summary
    rollout = summary["rollout"]
    assert (rollout["applied"], rollout["rejected"], rollout["missing"]) == (DEVICES - 2, 2, 0), rollout
    assert 0 < rollout["p50_s"] <= rollout["p99_s"] <= rollout["all_s"], rollout

    real_kinds = by_kind(collector, real_root)
    sim_kinds = by_kind(collector, "edge_app/sim-0000")
    compared = ["status", "cameras/+/state", "cameras/+/detect/state", "stats", "events", "cameras/+/objects/+", "config/reported"]
    for kind in compared:
        assert real_kinds[kind], f"the real appliance sent nothing on {kind}: {sorted(real_kinds)}"
        assert sim_kinds[kind], f"the simulated appliance sent nothing on {kind}: {sorted(sim_kinds)}"
    # Simulated appliances send no detections (one per frame) and no snapshots; everything else they do.
    assert set(sim_kinds) == set(real_kinds) - {"cameras/+/detections", "cameras/+/+/snapshot"}, (sorted(sim_kinds), sorted(real_kinds))

    for kind, keys in SPEC_KEYS.items():
        for message in real_kinds[kind][:1] + sim_kinds[kind]:
            assert set(message.json()) == keys, (kind, message.topic, message.payload[:300])
    for kind in ("status", "cameras/+/state", "cameras/+/objects/+", "config/reported"):
        assert shape(sim_kinds[kind][0].json()) == shape(real_kinds[kind][0].json()), kind
    assert {m.payload for m in sim_kinds["cameras/+/detect/state"]} == {b"ON"} == {m.payload for m in real_kinds["cameras/+/detect/state"]}
    assert sample_stats_shape(sim_kinds["stats"][0].json()) == sample_stats_shape(real_kinds["stats"][0].json())
    assert STATS_KEYS <= set(sim_kinds["stats"][0].json())

    real_events = {m.json()["type"]: m.json() for m in real_kinds["events"]}
    sim_events = [m.json() for m in sim_kinds["events"]]
    for body in sim_events:
        assert set(body["after"]) == EVENT_KEYS and (body["before"] is None) == (body["type"] == "new"), body
    for kind in set(real_events) & {"new", "update", "end"}:
        sim_body = next(b for b in sim_events if b["type"] == kind)
        assert shape(sim_body) == shape(real_events[kind]), kind
    first = sim_events[0]["after"]["id"]
    assert [b["type"] for b in sim_events if b["after"]["id"] == first] == ["new", "update", "end"]

    cameras = Counter(kind_of(m.topic, "edge_app/sim-0000") for m in collector.messages("edge_app/sim-0000/cameras/+/state"))
    assert len({m.topic for m in collector.messages("edge_app/sim-0000/cameras/+/state")}) == 4, cameras
    reported = {device: collector.messages(f"edge_app/{device}/config/reported")[0].json() for device in ("e2e", "sim-0000", "sim-0001")}
    assert reported["e2e"]["status"] == reported["sim-0000"]["status"] == "applied", reported
    assert reported["sim-0001"]["status"] == "rejected" and reported["sim-0001"]["errors"][0]["loc"] == "cameras.0.fps_limit", reported
    # A real appliance's clean stop and a simulated one's both leave "offline" retained.
    assert collector.messages(f"{real_root}/status")[-1].json()["state"] == "offline"


@pytest.mark.parametrize("argv, problem", [
    ([], None),
    (["--devices", "0"], "--devices must be positive"),
    (["--stats-interval-s", "0"], "--stats-interval-s must be positive"),
    (["--kill", "-1"], "cannot be negative"),
    (["--id-format", "dev-{nope}"], "does not format"),
    (["--id-format", "dev/{index}"], "not a valid device_id"),
    (["--rollout-patch", "[1]"], "must be a JSON object"),
])
def test_options_that_cannot_run_are_refused_before_anything_starts(argv, problem):
    from bench.fleet.sim import build_parser, check_args

    found = check_args(build_parser().parse_args(argv))
    assert (found is None) if problem is None else (problem in found), found
