"""Rollouts of model versions through the desired configuration, with each device's reported
``models_state`` (over a real Mosquitto) shown per rollout and per device, on SQLite and PostgreSQL."""
from __future__ import annotations

import requests

from tests.fleet.artifact_helpers import ADMIN, artifact_fleet, model_bytes, upload
from testkit.waiting import wait_for


def _rollout(fleet, rollout_id: str) -> dict:
    response = requests.get(f"{fleet.url}/api/v1/rollouts/{rollout_id}", headers=ADMIN, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def _model_states(fleet, rollout_id: str) -> dict:
    return {r["device_id"]: r["model"] for r in _rollout(fleet, rollout_id)["results"]}


def _start(fleet, version: str, devices) -> dict:
    response = requests.post(f"{fleet.url}/api/v1/models/gate/{version}/rollout", json={"devices": devices},
                             headers=ADMIN, timeout=10)
    assert response.status_code == 202, response.text
    return response.json()


def _report(device, state: dict, via: str = "status") -> None:
    """What the appliance sends: models_state in its retained status or in a configuration report."""
    if via == "status":
        device.publish("status", {"state": "online", "device_id": device.device_id, "version": "sim",
                                  "models_state": state}, retain=True)
    else:
        device.publish("config/reported", {"version": device.applied_version, "status": "applied",
                                           "models_state": state}, retain=True)


def test_a_model_rollout_shows_each_devices_state_and_a_rollback_is_the_previous_version(fleet_factory, sim_devices,
                                                                                          tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    for version, seed in (("2", 2), ("3", 3)):
        assert upload(fleet, "gate", version, model_bytes(4000, seed=seed)).status_code == 201
    a, b, c = (sim_devices(fleet.prefix, dev) for dev in ("edge-a", "edge-b", "edge-c"))
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=online", headers=ADMIN).json()["devices"]) == 3, 10,
             "three devices online")

    started = _start(fleet, "3", ["edge-a", "edge-b"])
    assert set(started["versions"]) == {"edge-a", "edge-b"}
    wait_for(lambda: a.config and b.config, 10, "both devices got the desired configuration")
    assert a.config == {"models": {"artifact:gate": {"artifact": {"version": "3"}}}}
    assert c.config == {}
    first = _rollout(fleet, started["rollout_id"])
    assert first["model"]["name"] == "gate" and first["model"]["version"] == "3"

    _report(a, {"gate": {"version": "3", "state": "downloading", "progress": 0.25, "reason": None}})
    _report(b, {"gate": {"version": "3", "state": "failed", "progress": None,
                         "reason": "sha256 of onnx does not match the manifest"}}, via="reported")
    states = wait_for(lambda: (lambda s: s if s["edge-a"]["state"] == "downloading" and s["edge-b"]["state"] == "failed"
                               else None)(_model_states(fleet, started["rollout_id"])), 10, "states reported")
    assert states["edge-a"] == {"name": "gate", "version": "3", "state": "downloading", "progress": 0.25, "reason": None}
    assert states["edge-b"]["reason"] == "sha256 of onnx does not match the manifest"

    _report(a, {"gate": {"version": "3", "state": "running", "progress": 1, "reason": None},
                "../evil": {"version": "1", "state": "running"}, "other": {"version": "x", "state": "exploded"}})
    wait_for(lambda: _model_states(fleet, started["rollout_id"])["edge-a"]["state"] == "running", 10, "edge-a running")
    body = _rollout(fleet, started["rollout_id"])
    assert body["model"]["devices"] == {"waiting": 0, "downloading": 0, "building": 0, "running": 1, "failed": 1}
    page = fleet.get("/api/v1/devices/edge-a", headers=ADMIN).json()
    assert page["models_state"] == {"gate": {"version": "3", "state": "running", "progress": 1.0, "reason": None}}

    back = _start(fleet, "2", ["edge-a"])  # rollback: a rollout of the version before
    wait_for(lambda: a.config == {"models": {"artifact:gate": {"artifact": {"version": "2"}}}}, 10, "edge-a told to go back")
    assert _model_states(fleet, back["rollout_id"])["edge-a"] == {
        "name": "gate", "version": "2", "state": "waiting", "progress": None, "reason": "the device reports version 3"}
    _report(a, {"gate": {"version": "2", "state": "building", "progress": None, "reason": None}})
    wait_for(lambda: _model_states(fleet, back["rollout_id"])["edge-a"]["state"] == "building", 10, "edge-a building 2")


def test_a_model_rollout_is_refused_for_unknown_models_devices_and_without_the_admin_token(fleet_factory, sim_devices,
                                                                                           tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    upload(fleet, "gate", "1", model_bytes(100))
    sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.get("/api/v1/devices/edge-a", headers=ADMIN).status_code == 200, 10, "edge-a known")
    url = f"{fleet.url}/api/v1/models/gate/1/rollout"
    assert requests.post(url, json={"devices": "all"}, timeout=10).status_code == 401
    assert requests.post(url, json={"devices": "all"}, timeout=10,
                         headers={"Authorization": "Bearer token-of-edge-a-0123456789",
                                  "X-Edge-Device": "edge-a"}).status_code == 401
    assert requests.post(f"{fleet.url}/api/v1/models/gate/9/rollout", json={"devices": "all"}, headers=ADMIN,
                         timeout=10).status_code == 404
    assert requests.post(url, json={"devices": ["edge-zz"]}, headers=ADMIN, timeout=10).status_code == 400
    assert requests.post(url, json={"devices": "all", "path": "/etc"}, headers=ADMIN, timeout=10).status_code == 400
    assert requests.post(url, json={"devices": ["edge-a"]}, headers=ADMIN, timeout=10).status_code == 202


def test_all_in_a_model_rollout_is_every_device_that_reports_the_model(fleet_factory, sim_devices, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    assert upload(fleet, "gate", "2", model_bytes(1000, seed=2)).status_code == 201
    a, b = (sim_devices(fleet.prefix, dev) for dev in ("edge-a", "edge-b"))
    c = sim_devices(fleet.prefix, "edge-c", reject_keys=("models",))  # as an appliance not running gate does
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=online", headers=ADMIN).json()["devices"]) == 3, 10,
             "three devices online")
    url = f"{fleet.url}/api/v1/models/gate/2/rollout"

    # No device runs gate yet: nothing to roll out to, and no empty rollout is stored.
    refused = requests.post(url, json={"devices": "all"}, headers=ADMIN, timeout=10)
    assert refused.status_code == 409, refused.text
    assert "no device reports the fleet model 'gate'" in refused.json()["error"]
    assert fleet.get("/api/v1/rollouts", headers=ADMIN).json()["rollouts"] == []

    # Before any rollout a device that runs gate reports it as version 0; c runs another model.
    _report(a, {"gate": {"version": "0", "state": "running", "progress": None, "reason": None}})
    _report(b, {"gate": {"version": "1", "state": "failed", "progress": None, "reason": "disk full"}}, via="reported")
    _report(c, {"door": {"version": "0", "state": "running", "progress": None, "reason": None}})
    wait_for(lambda: all(fleet.get(f"/api/v1/devices/{dev}", headers=ADMIN).json()["models_state"]
                         for dev in ("edge-a", "edge-b", "edge-c")), 10, "models_state of the three devices")

    started = _start(fleet, "2", "all")
    assert set(started["versions"]) == {"edge-a", "edge-b"}
    assert started["targeted"] == 2
    wait_for(lambda: a.config and b.config, 10, "both devices that run gate got the desired configuration")
    assert a.config == b.config == {"models": {"artifact:gate": {"artifact": {"version": "2"}}}}
    assert c.config == {}
    assert {r["device_id"] for r in _rollout(fleet, started["rollout_id"])["results"]} == {"edge-a", "edge-b"}

    # A list still targets exactly the devices it names, and c refuses a model it does not run.
    listed = _start(fleet, "2", ["edge-c"])
    assert set(listed["versions"]) == {"edge-c"} and listed["targeted"] == 1
    refusal = wait_for(lambda: (lambda r: r if r["status"] == "rejected" else None)(
        _rollout(fleet, listed["rollout_id"])["results"][0]), 10, "edge-c refused")
    assert refusal["model"]["state"] == "failed" and "refused the configuration change" in refusal["model"]["reason"]
    assert c.config == {}


def test_a_hostile_models_state_is_kept_within_its_bounds(fleet_factory, sim_devices, tmp_path):
    """Anyone on the broker can send a models_state: the fleet keeps at most 32 models, names and
    versions it would accept itself, known states, progress within 0..1 and reasons cut short."""
    from edge_app.fleet_service.model_state import MAX_MODELS, MAX_REASON_CHARS

    fleet = artifact_fleet(fleet_factory, tmp_path)
    a = sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.get("/api/v1/devices/edge-a", headers=ADMIN).status_code == 200, 10, "edge-a known")
    hostile = {"n" * 65: {"version": "1", "state": "running"}, "long-version": {"version": "1" * 33, "state": "running"},
               "odd-state": {"version": "1", "state": "exploded"}, "not-an-entry": ["1", "running"]}
    progress = [-5, 0.5, 7, 1e300, True, "0.5", None]
    many = {f"m{i:02d}": {"version": "1", "state": "downloading", "progress": progress[i % len(progress)],
                          "reason": "r" * 1000} for i in range(40)}
    _report(a, {**hostile, **many}, via="reported")
    kept = wait_for(lambda: fleet.get("/api/v1/devices/edge-a", headers=ADMIN).json()["models_state"], 10,
                    "models_state kept")
    assert 0 < len(kept) <= MAX_MODELS and set(kept) <= set(many)
    for entry in kept.values():
        assert set(entry) == {"version", "state", "progress", "reason"} and entry["state"] == "downloading"
        assert entry["progress"] is None or 0.0 <= entry["progress"] <= 1.0
        assert len(entry["reason"]) == MAX_REASON_CHARS
    assert {kept[n]["progress"] for n in ("m00", "m01", "m02", "m03", "m04", "m05")} == {0.0, 0.5, 1.0, None}
