"""Who may put engines in the fleet, and the admin's deletions of models and engines (docs/fleet.md,
"Models and engines over the air"): a real fleet service over HTTP, on SQLite and PostgreSQL, and
devices reporting ``models_state`` over a real Mosquitto."""
from __future__ import annotations

import requests

from tests.fleet.artifact_helpers import (ADMIN, ADMIN_TOKEN, KEYS, TOKENS, as_device, artifact_fleet, engine_key,
                                          model_bytes, offer, sha, upload)
from testkit.waiting import wait_for


def _stored_files(tmp_path):
    return sorted(p.name for p in (tmp_path / "artifacts").rglob("*") if p.is_file())


def _manifest_engines(fleet, device_id="edge-b"):
    answer = requests.get(f"{fleet.url}/api/v1/devices/{device_id}/models/gate/1/manifest",
                          headers=as_device(device_id), timeout=10)
    assert answer.status_code == 200, answer.text
    return [e["sha256"] for e in answer.json()["engines"]]


def test_by_default_the_fleet_keeps_no_device_engine(fleet_factory, tmp_path):
    """An engine offered runs on every device with its key: none is taken unless the operator
    names the devices trusted to build (artifacts.engines_from)."""
    fleet = fleet_factory(api={"token": ADMIN_TOKEN}, device_tokens=TOKENS, desired_keys=KEYS,
                          artifacts={"dir": str(tmp_path / "artifacts")})
    onnx = model_bytes(100)
    upload(fleet, "gate", "1", onnx)
    refused = offer(fleet, "edge-a", engine_key(sha(onnx)), b"engine from a")
    assert refused.status_code == 403 and "artifacts.engines_from" in refused.json()["error"]
    assert _manifest_engines(fleet) == []


def test_a_device_offers_engines_for_its_own_gpu_only(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(100)
    upload(fleet, "gate", "1", onnx)
    assert offer(fleet, "edge-a", engine_key(sha(onnx)), b"h200 fp16").json()["stored"] is True
    # the same GPU, another precision: its own GPU still
    assert offer(fleet, "edge-a", engine_key(sha(onnx), precision="int8"), b"h200 int8").json()["stored"] is True
    other = offer(fleet, "edge-a", engine_key(sha(onnx), gpu_name="Orin", compute_capability="8.7"), b"for orins")
    assert other.status_code == 409
    assert "offers engines for its own GPU only" in other.json()["error"] and "NVIDIA H200" in other.json()["error"]
    assert sha(b"for orins") not in _manifest_engines(fleet)
    # another device is pinned to its own GPU, not to edge-a's
    assert offer(fleet, "edge-b", engine_key(sha(onnx), gpu_name="Orin", compute_capability="8.7"),
                 b"orin fp16").json()["stored"] is True
    # a replaced board: the admin deletes the device's engines, and its next GPU is its own
    deleted = requests.delete(f"{fleet.url}/api/v1/devices/edge-a/engines", headers=ADMIN, timeout=10)
    assert deleted.status_code == 200 and deleted.json()["deleted"] == sorted([sha(b"h200 fp16"), sha(b"h200 int8")])
    assert offer(fleet, "edge-a", engine_key(sha(onnx), gpu_name="Orin", compute_capability="8.7", precision="int8"),
                 b"orin int8").json()["stored"] is True
    assert sorted(_manifest_engines(fleet)) == sorted([sha(b"orin fp16"), sha(b"orin int8")])
    assert sha(b"h200 fp16") not in _stored_files(tmp_path)


def test_an_admin_deletes_one_engine_and_its_file(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(100)
    upload(fleet, "gate", "1", onnx)
    offer(fleet, "edge-a", engine_key(sha(onnx)), b"suspect engine")
    url = f"{fleet.url}/api/v1/engines/{sha(b'suspect engine')}"
    assert requests.delete(url, headers=as_device("edge-a"), timeout=10).status_code == 401  # devices may not
    assert requests.delete(url, timeout=10).status_code == 401
    assert requests.delete(url, headers=ADMIN, timeout=10).json() == {"deleted": [sha(b"suspect engine")]}
    assert _manifest_engines(fleet) == [] and sha(b"suspect engine") not in _stored_files(tmp_path)
    assert requests.get(f"{fleet.url}/api/v1/blobs/{sha(b'suspect engine')}", headers=as_device("edge-b"),
                        timeout=10).status_code == 404
    assert requests.delete(url, headers=ADMIN, timeout=10).status_code == 404
    assert requests.delete(f"{fleet.url}/api/v1/engines/..%2F..%2Fetc", headers=ADMIN, timeout=10).status_code in (400, 404)
    assert requests.delete(f"{fleet.url}/api/v1/devices/x%20y/engines", headers=ADMIN, timeout=10).status_code == 400


def test_a_model_version_that_devices_report_is_deleted_only_with_force(fleet_factory, sim_devices, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx, shared, labels = model_bytes(4000, seed=1), model_bytes(4000, seed=2), b"plate\n"
    upload(fleet, "gate", "1", onnx, labels=labels)
    upload(fleet, "gate", "2", shared)
    upload(fleet, "door", "1", shared)  # the same ONNX file under another name
    offer(fleet, "edge-a", engine_key(sha(onnx)), b"engine of 1")
    offer(fleet, "edge-a", engine_key(sha(shared)), b"engine of the shared file")
    device = sim_devices(fleet.prefix, "edge-b")
    device.publish("status", {"state": "online", "device_id": "edge-b", "version": "sim",
                              "models_state": {"gate": {"version": "1", "state": "running"}}}, retain=True)
    gate_1 = f"{fleet.url}/api/v1/models/gate/1"
    wait_for(lambda: requests.get(f"{fleet.url}/api/v1/devices/edge-b", headers=ADMIN, timeout=10)
             .json().get("models_state", {}).get("gate"), 10, "edge-b's report of gate 1 to reach the fleet")
    refused = requests.delete(gate_1, headers=ADMIN, timeout=10)
    assert refused.status_code == 409, refused.text
    assert "edge-b" in refused.json()["error"] and "force=true" in refused.json()["error"]
    assert requests.delete(gate_1 + "?force=maybe", headers=ADMIN, timeout=10).status_code == 400
    assert requests.delete(gate_1 + "?force=true", headers=ADMIN, timeout=10).status_code == 200
    # its files and engine go; the file that another version still has stays, with its engine
    stored = _stored_files(tmp_path)
    assert not {sha(onnx), sha(labels), sha(b"engine of 1")} & set(stored)
    assert requests.get(f"{gate_1}", headers=ADMIN, timeout=10).status_code in (404, 405)
    manifest = requests.get(f"{fleet.url}/api/v1/devices/edge-b/models/gate/1/manifest", headers=as_device("edge-b"),
                            timeout=10)
    assert manifest.status_code == 404
    # nobody reports gate 2: deleted at once, but the shared file and its engine stay for door 1
    assert requests.delete(f"{fleet.url}/api/v1/models/gate/2", headers=ADMIN, timeout=10).status_code == 200
    assert {sha(shared), sha(b"engine of the shared file")} <= set(_stored_files(tmp_path))
    listed = requests.get(f"{fleet.url}/api/v1/models", headers=ADMIN, timeout=10).json()["models"]
    assert [(m["name"], m["version"], len(m["engines"])) for m in listed] == [("door", "1", 1)]
    assert requests.delete(f"{fleet.url}/api/v1/models/gate/2", headers=ADMIN, timeout=10).status_code == 404
