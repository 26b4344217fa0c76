"""The fleet service with two real ``edge-app run`` appliances and simulated ones on one real Mosquitto.

The appliances run for the whole module (a model load each); every test starts its own fleet
service on a fresh database of each engine, which learns the appliances' state from the
retained messages, and adopts the versions earlier fleet databases issued with the reset path. Appliance ``edge-labels`` reads its
labels from a file in which COCO's ``person`` is called ``human``: a rollout of
``model.classes: [person]`` is valid on ``edge-coco`` and invalid there.
"""
from __future__ import annotations

import shutil
import signal
import time

import pytest

from edge_app.version import __version__
from testkit.appliance import ApplianceProcess
from testkit.waiting import wait_for
from testkit.broker import MosquittoBroker
from tests.support.fleet import start_fleet
from tests.support.fleet_devices import SimDevice
from testkit.net import free_port

pytestmark = pytest.mark.slow

PREFIX = "fleet_e2e"
SOURCE = "test://bars?width=160&height=120&fps=2"
COCO = "edge_app/detect/coco80.txt"
# Each appliance acts only on desired configurations the fleet service signed with its key.
DESIRED_KEYS = {"edge-coco": "coco-desired-key-0123456789abcdef", "edge-labels": "labels-desired-key-0123456789abcd"}


def _appliance(workdir, broker, device_id: str, model_path, labels=None) -> ApplianceProcess:
    model = {"path": str(model_path), "max_batch": 1, **({"labels": str(labels)} if labels else {})}
    config = {"device_id": device_id, "cameras": [{"id": "bars", "source": SOURCE, "detect": False}],
              "model": model, "events": {"dir": str(workdir / "events")},
              "mqtt": {"host": broker.host, "port": broker.port, "topic_prefix": PREFIX, "keepalive": 5},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "fleet": {"remote_config": True, "desired_key": DESIRED_KEYS[device_id]}}
    return ApplianceProcess(config, workdir)


@pytest.fixture(scope="module")
def appliances(tmp_path_factory, model_path):
    broker = MosquittoBroker(tmp_path_factory.mktemp("broker")).start()
    labels_dir = tmp_path_factory.mktemp("labels")
    labels = labels_dir / "labels.txt"
    shutil.copy(COCO, labels)
    labels.write_text(labels.read_text().replace("person\n", "human\n", 1))
    coco = _appliance(tmp_path_factory.mktemp("edge-coco"), broker, "edge-coco", model_path)
    renamed = _appliance(tmp_path_factory.mktemp("edge-labels"), broker, "edge-labels", model_path, labels)
    for app in (coco, renamed):
        app.start()
    yield broker, {"edge-coco": coco, "edge-labels": renamed}
    for app in (coco, renamed):
        app.close()
    broker.kill()


@pytest.fixture
def fleet(appliances, fleet_db_url, mqtt_collector):
    broker, _ = appliances
    reports = mqtt_collector(broker, f"{PREFIX}/+/config/reported")
    running = start_fleet(broker, fleet_db_url, topic_prefix=PREFIX, desired_keys=DESIRED_KEYS)
    # The appliances keep the versions the fleet databases of earlier tests issued. This fleet
    # never issued them and ignores them, so the operator adopts them with the reset path, as
    # after a fleet database started anew (docs/fleet.md).
    time.sleep(1.0)  # the retained reports come right after the subscription
    for message in reports.messages():
        device_id, version = message.topic.split("/")[1], message.json().get("version")
        if isinstance(version, int) and version > 0:
            wait_for(lambda: running.device(device_id).get("config", {}).get("unissued_version") == version, 10,
                     f"{device_id}'s version {version} seen")
            assert running.post(f"/api/v1/devices/{device_id}/config/reset", {"version": version}).status_code == 200
    yield running
    running.stop()


@pytest.fixture
def simulated(appliances):
    broker, _ = appliances
    devices = [SimDevice(broker.host, broker.port, PREFIX, f"sim-{i}").start() for i in range(2)]
    yield devices
    for device in devices:
        device.kill()


def _states(fleet) -> dict:
    return {d["device_id"]: d for d in fleet.get("/api/v1/devices").json()["devices"]}


def _all_online(fleet, names) -> dict:
    return wait_for(lambda: (lambda d: d if all(d.get(n, {}).get("state") == "online" for n in names) else None)(
        _states(fleet)), 20, f"{sorted(names)} online")


def test_real_and_simulated_appliances_make_one_inventory_with_events(fleet, simulated):
    simulated[0].event("new", "ev-sim", camera="cam1", zones=["door"])
    devices = _all_online(fleet, ["edge-coco", "edge-labels", "sim-0", "sim-1"])
    assert devices["edge-coco"]["version"] == __version__
    # A camera reports "connecting" before "streaming": wait for the state it settles in.
    cameras = wait_for(lambda: (lambda cams: cams if any(c["state"] != "connecting" for c in cams) else None)(
        fleet.device("edge-labels")["cameras"]), 20, "edge-labels' camera past connecting")
    assert [(c["id"], c["state"]) for c in cameras] == [("bars", "streaming")]
    stats = wait_for(lambda: fleet.device("edge-coco").get("stats"), 20, "stats of a real appliance")
    assert "fps" in stats
    events = wait_for(lambda: fleet.get("/api/v1/events?zone=door").json()["events"], 10, "the simulated event")
    assert [(e["device_id"], e["id"]) for e in events] == [("sim-0", "ev-sim")]


def test_a_rollout_one_appliance_rejects_is_applied_by_the_others_with_the_error_shown(fleet, simulated, appliances):
    _, apps = appliances
    _all_online(fleet, ["edge-coco", "edge-labels", "sim-0", "sim-1"])
    wanted = ["person"] if fleet.device("edge-coco")["config"]["reported_version"] % 2 == 0 else ["person", "car"]
    response = fleet.patch("/api/v1/fleet/config", {"devices": ["edge-coco", "edge-labels", "sim-0", "sim-1"],
                                                     "patch": {"model": {"classes": wanted}}})
    assert response.status_code == 202, response.text
    rollout_id = response.json()["rollout_id"]
    result = wait_for(lambda: (lambda r: r if r["devices"]["pending"] == 0 else None)(
        fleet.get(f"/api/v1/rollouts/{rollout_id}").json()), 60, "every device reported")
    by_device = {r["device_id"]: r for r in result["results"]}
    assert {d: r["status"] for d, r in by_device.items()} == {
        "edge-coco": "applied", "edge-labels": "rejected", "sim-0": "applied", "sim-1": "applied"}
    errors = by_device["edge-labels"]["errors"]
    assert errors and errors[0]["loc"].startswith("model.classes") and "person" in errors[0]["msg"]
    assert fleet.device("edge-labels")["config"]["status"] == "rejected"
    assert apps["edge-coco"].get("/api/v1/config").json()["model"]["classes"] == wanted
    assert apps["edge-labels"].get("/api/v1/config").json()["model"]["classes"] == []


def test_an_appliance_stopped_during_a_rollout_applies_it_when_it_returns(fleet, appliances):
    _, apps = appliances
    away = apps["edge-coco"]
    _all_online(fleet, ["edge-coco", "edge-labels"])
    away.terminate()
    wait_for(lambda: fleet.device("edge-coco")["state"] == "offline", 5, "edge-coco offline after a clean stop")
    limit = 2_000 + fleet.device("edge-coco")["config"]["desired_version"]
    response = fleet.patch("/api/v1/fleet/config", {"devices": "all", "patch": {"events": {"max_mb": limit}}})
    rollout_id = response.json()["rollout_id"]
    wait_for(lambda: fleet.get(f"/api/v1/rollouts/{rollout_id}").json()["devices"]["applied"] >= 1, 30,
             "edge-labels applied")
    assert {r["device_id"]: r["status"] for r in fleet.get(f"/api/v1/rollouts/{rollout_id}").json()["results"]
            }["edge-coco"] == "pending"
    away.start()
    wait_for(lambda: {r["device_id"]: r["status"] for r in fleet.get(f"/api/v1/rollouts/{rollout_id}").json()["results"]
                      }["edge-coco"] == "applied", 60, "edge-coco applied after its return")
    assert away.get("/api/v1/config").json()["events"]["max_mb"] == limit
    assert fleet.device("edge-coco")["state"] == "online"


def test_a_killed_appliance_shows_offline_at_once(fleet, appliances):
    _, apps = appliances
    victim = apps["edge-labels"]
    _all_online(fleet, ["edge-coco", "edge-labels"])
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(5)
    wait_for(lambda: fleet.device("edge-labels")["state"] == "offline", 3, "the last will of a killed appliance")
    victim.start()
    _all_online(fleet, ["edge-labels"])
