"""Model files, blobs, signed manifests and engine offers over real HTTP, on SQLite and PostgreSQL."""
from __future__ import annotations

import hashlib
import hmac
import json
import time

import requests

from edge_app.http_server.http_limits import HttpLimits
from edge_app.http_server.server import ApiServer
from edge_app.fleet_service.app import create_fleet_app
from edge_app.fleet_service.artifact_routes import UPLOAD_PATH_PREFIXES
from edge_app.canonical_json import canonical_json
from tests.api import raw_http
from tests.fleet.artifact_helpers import (ADMIN, ADMIN_TOKEN, KEYS, TOKENS, as_device, artifact_fleet, engine_key, model_bytes, offer, sha,
                                          upload)

LABELS = b"person\nbicycle\ncar\n"


def _manifest(fleet, device_id: str, name: str, version: str, headers=None) -> requests.Response:
    return requests.get(f"{fleet.url}/api/v1/devices/{device_id}/models/{name}/{version}/manifest",
                        headers=headers if headers is not None else as_device(device_id), timeout=10)


def _verifies(manifest: dict, key: str) -> bool:
    unsigned = {k: v for k, v in manifest.items() if k != "signature"}
    expected = hmac.new(key.encode(), canonical_json(unsigned).encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, manifest["signature"])


def test_models_are_uploaded_listed_and_never_changed_once_stored(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(3 * 1024 * 1024 + 17)
    assert requests.put(f"{fleet.url}/api/v1/models/gate/1", data=onnx, timeout=10).status_code == 401
    first = upload(fleet, "gate", "1", onnx, LABELS)
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["onnx"] == {"role": "onnx", "sha256": sha(onnx), "bytes": len(onnx)}
    assert body["labels"] == {"role": "labels", "sha256": sha(LABELS), "bytes": len(LABELS)}
    assert upload(fleet, "gate", "1", onnx, LABELS).status_code == 200  # the same again: nothing changes
    conflict = upload(fleet, "gate", "1", model_bytes(1000))
    assert conflict.status_code == 409 and "new version" in conflict.json()["error"]
    raw = upload(fleet, "gate", "2", model_bytes(2000, seed=2))
    assert raw.status_code == 201 and raw.json()["labels"] is None
    labels = requests.post(f"{fleet.url}/api/v1/models/gate/2/labels", data=LABELS, headers=ADMIN, timeout=10)
    assert labels.status_code == 200 and labels.json()["labels"]["sha256"] == sha(LABELS)

    listed = requests.get(f"{fleet.url}/api/v1/models", headers=ADMIN, timeout=10).json()
    assert [(m["name"], m["version"]) for m in listed["models"]] == [("gate", "1"), ("gate", "2")]
    assert listed["used_bytes"] == len(onnx) + len(LABELS) + 2000  # the labels are stored once
    stored = tmp_path / "artifacts" / sha(onnx)[:2] / sha(onnx)
    assert stored.read_bytes() == onnx
    assert list((tmp_path / "artifacts" / "incoming").iterdir()) == []


def test_a_blob_is_served_whole_or_by_range_and_a_cut_download_resumes(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(2 * 1024 * 1024 + 5)
    upload(fleet, "gate", "1", onnx)
    url = f"{fleet.url}/api/v1/blobs/{sha(onnx)}"
    whole = requests.get(url, headers=as_device("edge-a"), timeout=10)
    assert whole.status_code == 200 and whole.content == onnx
    assert int(whole.headers["Content-Length"]) == len(onnx)
    assert requests.get(url, headers=ADMIN, timeout=10).status_code == 200
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, headers=as_device("edge-a", "wrong-token-0123456789"), timeout=10).status_code == 401

    # A download cut after the first 700 000 bytes, then resumed from there.
    got = b""
    with requests.get(url, headers=as_device("edge-a"), stream=True, timeout=10) as cut:
        for chunk in cut.iter_content(100_000):
            got += chunk
            if len(got) >= 700_000:
                break
    rest = requests.get(url, headers=as_device("edge-a", Range=f"bytes={len(got)}-"), timeout=10)
    assert rest.status_code == 206
    assert rest.headers["Content-Range"] == f"bytes {len(got)}-{len(onnx) - 1}/{len(onnx)}"
    assert sha(got + rest.content) == sha(onnx)

    middle = requests.get(url, headers=as_device("edge-a", Range="bytes=10-19"), timeout=10)
    assert middle.status_code == 206 and middle.content == onnx[10:20]
    beyond = requests.get(url, headers=as_device("edge-a", Range=f"bytes={len(onnx)}-"), timeout=10)
    assert beyond.status_code == 416
    assert requests.get(f"{fleet.url}/api/v1/blobs/{'0' * 64}", headers=ADMIN, timeout=10).status_code == 404


def test_a_manifest_is_signed_for_its_device_and_only_that_device_gets_it(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(5000)
    upload(fleet, "gate", "3", onnx, LABELS)
    response = _manifest(fleet, "edge-a", "gate", "3")
    assert response.status_code == 200, response.text
    manifest = response.json()
    assert manifest["device_id"] == "edge-a" and manifest["model"] == "gate" and manifest["version"] == "3"
    assert manifest["files"] == [{"role": "onnx", "sha256": sha(onnx), "bytes": 5000},
                                 {"role": "labels", "sha256": sha(LABELS), "bytes": len(LABELS)}]
    assert manifest["engines"] == [] and isinstance(manifest["issued"], int)
    assert _verifies(manifest, KEYS["edge-a"])
    assert not _verifies(manifest, KEYS["edge-b"])
    assert not _verifies({**manifest, "device_id": "edge-b"}, KEYS["edge-a"])

    assert _manifest(fleet, "edge-b", "gate", "3", as_device("edge-a")).status_code == 403
    assert _manifest(fleet, "edge-b", "gate", "3", as_device("edge-b", "token-of-edge-a-0123456789")).status_code == 401
    assert _manifest(fleet, "edge-zz", "gate", "3", as_device("edge-zz", "token-of-edge-a-0123456789")).status_code == 401
    assert _manifest(fleet, "edge-a", "gate", "3", ADMIN).status_code == 401  # devices only
    assert _manifest(fleet, "edge-a", "gate", "4").status_code == 404
    no_key = _manifest(fleet, "edge-nokey", "gate", "3")
    assert no_key.status_code == 409 and "desired_keys" in no_key.json()["error"]


def test_engines_are_offered_verified_kept_once_and_listed_in_manifests(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path, max_upload_mb=1)
    onnx = model_bytes(4000)
    upload(fleet, "gate", "1", onnx)
    engine = model_bytes(300_000, seed=7)
    key = engine_key(sha(onnx))

    bad = offer(fleet, "edge-a", key, engine, declared=sha(b"something else"))
    assert bad.status_code == 400 and "SHA-256" in bad.json()["error"]
    assert _manifest(fleet, "edge-a", "gate", "1").json()["engines"] == []
    good = offer(fleet, "edge-a", key, engine)
    assert good.status_code == 200 and good.json() == {"sha256": sha(engine), "stored": True}
    again = offer(fleet, "edge-b", key, engine)
    assert again.status_code == 200 and again.json()["stored"] is False
    other = offer(fleet, "edge-b", key, model_bytes(1000, seed=8))
    assert other.status_code == 409
    too_large = offer(fleet, "edge-b", engine_key(sha(onnx), precision="int8"), model_bytes(1024 * 1024 + 1, seed=9))
    assert too_large.status_code == 413 and "artifacts.max_upload_mb" in too_large.json()["error"]
    unknown = offer(fleet, "edge-a", engine_key("ab" * 32), engine)
    assert unknown.status_code == 404 and "ONNX" in unknown.json()["error"]
    no_platform = {k: v for k, v in key.items() if k != "platform"}
    assert offer(fleet, "edge-a", no_platform, engine).status_code == 400
    as_admin = requests.put(f"{fleet.url}/api/v1/engines", data=engine, timeout=10,
                            headers={**ADMIN, "X-Engine-Key": json.dumps(key), "X-Content-SHA256": sha(engine)})
    assert as_admin.status_code == 401

    manifest = _manifest(fleet, "edge-b", "gate", "1").json()
    assert manifest["engines"] == [{"key": key, "sha256": sha(engine), "bytes": len(engine)}]
    assert _verifies(manifest, KEYS["edge-b"])
    fetched = requests.get(f"{fleet.url}/api/v1/blobs/{sha(engine)}", headers=as_device("edge-b"), timeout=10)
    assert fetched.content == engine
    listed = requests.get(f"{fleet.url}/api/v1/models", headers=ADMIN, timeout=10).json()["models"][0]
    assert [e["device_id"] for e in listed["engines"]] == ["edge-a"]


def test_hostile_names_digests_and_headers_never_reach_the_filesystem(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(1000)
    upload(fleet, "gate", "1", onnx)
    before = sorted(p for p in tmp_path.rglob("*") if "artifacts" in p.parts or p.name.startswith("x"))
    for name, version in (("..", "1"), ("gate", ".."), ("a" * 65, "1"), ("gate", "v" * 33), ("ga te", "1"),
                          ("%2e%2e", "1"), ("gate", "1%00"), ("...", "1"), ("gate", "....")):  # dots only: no appliance takes them
        response = requests.put(f"{fleet.url}/api/v1/models/{name}/{version}", data=b"x", headers=ADMIN, timeout=10)
        # 404: the client resolved the dots itself and asked for a route that does not exist
        assert response.status_code in (400, 404), (name, version, response.status_code)
    assert requests.put(f"{fleet.url}/api/v1/models/ga%20te/1", data=b"x", headers=ADMIN, timeout=10).status_code == 400
    for path in ("..%2f..%2fetc%2fpasswd", "../../etc/passwd", sha(onnx).upper(), sha(onnx)[:63], sha(onnx) + "0",
                 "g" * 64):
        response = requests.get(f"{fleet.url}/api/v1/blobs/{path}", headers=ADMIN, timeout=10)
        assert response.status_code in (400, 404), (path, response.status_code)
    for declared in ("../" * 20, "x" * 64, sha(onnx).upper()):
        assert offer(fleet, "edge-a", engine_key(sha(onnx)), b"engine", declared=declared).status_code == 400
    for bad_key in ("[]", "{", json.dumps({"onnx_sha256": "../../x", "platform": "p"}),
                    json.dumps(engine_key(sha(onnx), gpu_name="x" * 300)),
                    json.dumps({f"f{i}": 1 for i in range(17)}), json.dumps(engine_key(sha(onnx), nested={"a": 1})),
                    "[" * 4000):  # nested past Python's recursion limit, yet short enough for the header
        response = requests.put(f"{fleet.url}/api/v1/engines", data=b"engine", timeout=10,
                                headers=as_device("edge-a", **{"X-Engine-Key": bad_key, "X-Content-SHA256": sha(b"engine")}))
        assert response.status_code == 400, (bad_key, response.text)
    odd_device = requests.get(f"{fleet.url}/api/v1/blobs/{sha(onnx)}", timeout=10,
                              headers={"Authorization": "Bearer token-of-edge-a-0123456789", "X-Edge-Device": "../edge-a"})
    assert odd_device.status_code == 401
    after = sorted(p for p in tmp_path.rglob("*") if "artifacts" in p.parts or p.name.startswith("x"))
    assert after == before
    assert requests.get(f"{fleet.url}/api/v1/models", headers=ADMIN, timeout=10).json()["models"][0]["name"] == "gate"


def _slow_send(server_url: str, head: bytes, body: bytes, seconds: float):
    with raw_http.connect(server_url) as sock:
        sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body))
        started, sent = time.monotonic(), 0
        try:
            while sent < len(body):  # each byte well inside the socket timeout; the whole past the body deadline
                sock.send(body[sent:sent + 1])
                sent += 1
                time.sleep(seconds / len(body))
        except OSError:
            pass
        return raw_http.read_response(sock)


def test_an_upload_may_take_longer_than_other_bodies(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    limits = HttpLimits(body_deadline_s=1.0, upload_path_prefixes=UPLOAD_PATH_PREFIXES, upload_deadline_s=30.0)
    server = ApiServer(create_fleet_app(fleet.service), "127.0.0.1", 0, limits=limits)
    server.start()
    try:
        auth = f"Authorization: Bearer {ADMIN_TOKEN}\r\nHost: 127.0.0.1\r\n".encode()
        upload = _slow_send(server.url, b"PUT /api/v1/models/slow/1 HTTP/1.1\r\n" + auth, b"0123456789" * 2, 1.6)
        assert upload.status == 201, upload.json()
        other = _slow_send(server.url, b"PATCH /api/v1/fleet/config HTTP/1.1\r\nContent-Type: application/json\r\n" + auth,
                           b'{"devices": "all", "patch": {"a": 1}}', 1.6)
        assert other.status == 408
    finally:
        server.stop(timeout_s=3)


def test_a_refused_upload_closes_the_connection_instead_of_reading_the_rest(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    upload(fleet, "gate", "1", b"onnx")
    with raw_http.connect(fleet.url) as sock:
        sock.sendall((f"PUT /api/v1/engines HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKENS['edge-a']}\r\n"
                      f"X-Edge-Device: edge-a\r\nX-Engine-Key: {json.dumps(engine_key('ab' * 32))}\r\n"
                      f"X-Content-SHA256: {sha(b'x')}\r\nContent-Length: 3000000\r\n\r\n").encode() + b"x" * 1000)
        answer = raw_http.read_response(sock)
        assert answer.status == 404  # an ONNX file the fleet does not hold: refused before the body is read
        assert answer.headers["connection"] == "close"
        assert raw_http.wait_closed(sock, 5)  # not after the 2,999,000 bytes never sent


def test_a_relative_artifact_directory_is_under_the_working_directory(fleet_factory, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fleet = fleet_factory(api={"token": ADMIN_TOKEN}, device_tokens=TOKENS, desired_keys=KEYS,
                          artifacts={"dir": "store"})
    onnx = model_bytes(70_000)
    assert upload(fleet, "gate", "1", onnx).status_code == 201
    assert (tmp_path / "store" / sha(onnx)[:2] / sha(onnx)).read_bytes() == onnx
    monkeypatch.chdir("/")  # the store stays where it was when the service started
    got = requests.get(f"{fleet.url}/api/v1/blobs/{sha(onnx)}", headers=as_device("edge-a", Range="bytes=1-"), timeout=10)
    assert got.status_code == 206 and got.content == onnx[1:]


def test_wrong_device_tokens_are_throttled_per_device_not_per_address(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(100)
    upload(fleet, "gate", "1", onnx)
    url = f"{fleet.url}/api/v1/blobs/{sha(onnx)}"
    answers = [requests.get(url, headers=as_device("edge-b", "guessed-token-0123456789"), timeout=10).status_code
               for _ in range(11)]
    assert answers == [401] * 10 + [429]
    assert requests.get(url, headers=as_device("edge-b"), timeout=10).status_code == 429  # for a while, even right
    assert requests.get(url, headers=as_device("edge-a"), timeout=10).status_code == 200  # same address, other device


def test_engines_are_taken_only_from_the_devices_allowed_to_offer_them(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path, artifacts={"engines_from": ["edge-a"]})
    onnx = model_bytes(100)
    upload(fleet, "gate", "1", onnx)
    refused = offer(fleet, "edge-b", engine_key(sha(onnx)), b"engine from b")
    assert refused.status_code == 403 and "artifacts.engines_from" in refused.json()["error"]
    assert offer(fleet, "edge-a", engine_key(sha(onnx)), b"engine from a").json()["stored"] is True


def test_one_device_cannot_crowd_a_model_file_with_engines(fleet_factory, tmp_path):
    """A device (or its stolen token) that offers engine after engine under made-up keys could
    push a model's manifest past the MAX_ENGINES an appliance accepts, and so stop that model
    version on every device. A device keeps at most MAX_ENGINES_PER_DEVICE engines per model file,
    and a manifest lists at most MAX_ENGINES (the newest), so every manifest stays one appliances take."""
    from edge_app.fleet_protocol.artifacts_manifest import MAX_ENGINES, verify_manifest
    from edge_app.fleet_service.artifacts import MAX_ENGINES_PER_DEVICE

    fleet = artifact_fleet(fleet_factory, tmp_path)
    onnx = model_bytes(4000)
    upload(fleet, "gate", "1", onnx)
    answers = [offer(fleet, "edge-a", engine_key(sha(onnx), max_batch=batch), b"engine %d" % batch)
               for batch in range(1, MAX_ENGINES_PER_DEVICE + 2)]
    assert [a.status_code for a in answers] == [200] * MAX_ENGINES_PER_DEVICE + [409]
    assert "at most" in answers[-1].json()["error"]
    assert offer(fleet, "edge-b", engine_key(sha(onnx), max_batch=99), b"engine of b").status_code == 200
    manifest = _manifest(fleet, "edge-b", "gate", "1")
    assert len(manifest.json()["engines"]) == MAX_ENGINES_PER_DEVICE + 1 <= MAX_ENGINES
    verify_manifest(manifest.content, desired_key=KEYS["edge-b"], device_id="edge-b", name="gate", version="1")


def test_a_manifest_lists_the_newest_engines_when_the_fleet_holds_more_than_appliances_take(
        fleet_factory, tmp_path):
    from edge_app.fleet_protocol.artifacts_manifest import MAX_ENGINES, verify_manifest
    from edge_app.fleet_service.artifacts import MAX_ENGINES_PER_DEVICE

    builders = {f"edge-builder-{i}": f"token-of-edge-builder-{i:02d}-0123" for i in range(MAX_ENGINES // MAX_ENGINES_PER_DEVICE + 1)}
    fleet = fleet_factory(api={"token": ADMIN_TOKEN}, device_tokens={**TOKENS, **builders}, desired_keys=KEYS,
                          artifacts={"dir": str(tmp_path / "artifacts"), "max_mb": 64, "max_upload_mb": 4,
                                     "engines_from": ["edge-builder-*"]})
    onnx = model_bytes(4000)
    upload(fleet, "gate", "1", onnx)
    batch = 0
    for device_id, token in builders.items():
        for _ in range(MAX_ENGINES_PER_DEVICE):
            batch += 1
            body = b"engine %d" % batch
            headers = as_device(device_id, token, **{"X-Engine-Key": canonical_json(engine_key(sha(onnx), max_batch=batch)),
                                                     "X-Content-SHA256": sha(body)})
            answer = requests.put(f"{fleet.url}/api/v1/engines", data=body, headers=headers, timeout=30)
            assert answer.status_code == 200, answer.text
    assert batch > MAX_ENGINES
    manifest = _manifest(fleet, "edge-a", "gate", "1")
    listed = sorted(e["key"]["max_batch"] for e in manifest.json()["engines"])
    assert listed == list(range(batch - MAX_ENGINES + 1, batch + 1))  # the newest, the oldest left out
    verify_manifest(manifest.content, desired_key=KEYS["edge-a"], device_id="edge-a", name="gate", version="1")


def test_an_upload_refused_for_its_labels_keeps_nothing(fleet_factory, tmp_path):
    fleet = artifact_fleet(fleet_factory, tmp_path)
    refused = upload(fleet, "gate", "1", model_bytes(5000), labels=b"x" * (1024 * 1024 + 1))
    assert refused.status_code == 413
    listed = requests.get(f"{fleet.url}/api/v1/models", headers=ADMIN, timeout=10).json()
    assert listed == {"models": [], "used_bytes": 0}
    assert [p for p in (tmp_path / "artifacts").rglob("*") if p.is_file()] == []
