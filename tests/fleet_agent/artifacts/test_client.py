"""The appliance's side of model artifacts against hostile input: manifests, HTTP answers, staging paths.

The HTTP tests run a real HTTP server on loopback that answers as a broken or hostile fleet
service would.
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from edge_app.detect.tensorrt.cache import EngineKey
from edge_app.fleet_agent.artifacts.client import FleetClient, FleetRefused, FleetUnreachable
from edge_app.health.free_space import NotEnoughSpace
from edge_app.fleet_protocol.artifacts_manifest import ManifestError, engine_for, manifest_signature, verify_manifest
from edge_app.fleet_agent.artifacts.stage import stage_dir
from edge_app.fleet_agent.artifacts.state import ModelsState
from tests.support.tmpfs import mounted_tmpfs

KEY = "desired-key-of-edge-b-0123456789abcdef"
ONNX = b"onnx bytes " * 1000
ENGINE_KEY = EngineKey(onnx_sha256=hashlib.sha256(ONNX).hexdigest(), tensorrt_version="10.3.0", gpu_name="Orin",
                       compute_capability="8.7", precision="fp16", max_batch=1, input_size=(640, 640), dla_core=None,
                       platform="L4T R36.4.0")


def manifest(key: str = KEY, **changes) -> bytes:
    body = {"device_id": "edge-b", "model": "gate", "version": "3", "issued": 1733350000,
            "files": [{"role": "onnx", "sha256": hashlib.sha256(ONNX).hexdigest(), "bytes": len(ONNX)}],
            "engines": [{"key": ENGINE_KEY.to_dict(), "sha256": "e" * 64, "bytes": 100}]}
    body.update(changes)
    body["signature"] = manifest_signature(key, body)
    return json.dumps(body).encode()


def verify(body: bytes, key=KEY, device_id="edge-b"):
    return verify_manifest(body, desired_key=key, device_id=device_id, name="gate", version="3")


def test_a_signed_manifest_for_this_device_is_accepted():
    found = verify(manifest())
    assert found.file("onnx").bytes == len(ONNX) and found.engines[0].key == ENGINE_KEY.to_dict()


@pytest.mark.parametrize("body, words", [
    (manifest(key="another-key-0123456789abcdef0123456789"), "signature does not verify"),
    (manifest()[:-2] + b"}}", "not JSON"),
    (json.dumps(dict(json.loads(manifest()), issued=1)).encode(), "signature does not verify"),
    (manifest(device_id="edge-a"), "for device 'edge-a'"),
    (manifest(version="4"), "not gate version 3"),
    (manifest(files=[]), "files must list"),
    (manifest(files=[{"role": "labels", "sha256": "a" * 64, "bytes": 1}]), "no ONNX"),
    (manifest(files=[{"role": "../../etc/passwd", "sha256": "a" * 64, "bytes": 1}]), "role"),
    (manifest(files=[{"role": ["onnx"], "sha256": "a" * 64, "bytes": 1}]), "role"),  # unhashable: no TypeError
    (manifest(files=[{"role": {"onnx": 1}, "sha256": "a" * 64, "bytes": 1}]), "role"),
    (manifest(files=["onnx"]), "role"),
    (manifest(engines=[{"key": {"a": 1}, "sha256": ["a"], "bytes": 1}]), "SHA-256"),
    (manifest(files=[{"role": "onnx", "sha256": "A" * 64, "bytes": 1}]), "SHA-256"),
    (manifest(files=[{"role": "onnx", "sha256": "a" * 64, "bytes": 1 << 40}]), "whole number"),
    (manifest(files=[{"role": "onnx", "sha256": "a" * 64, "bytes": True}]), "whole number"),
    (manifest(engines=[{"key": {}, "sha256": "a" * 64, "bytes": 1}] * 65), "at most 64"),
    (b"[" * 10 + b"]" * 10, "not a JSON object"),
    (b"[" * 100_000, "not JSON"),
    (manifest()[:-1] + b', "extra": NaN}', "the manifest is not JSON"),  # JSON has no NaN  # nested past Python's recursion limit, from whoever answers for the fleet
])
def test_manifests_this_appliance_must_not_act_on(body, words):
    with pytest.raises(ManifestError, match=words):
        verify(body)


def test_no_manifest_is_verified_without_a_desired_key():
    with pytest.raises(ManifestError, match="fleet.desired_key is not set"):
        verify(manifest(), key=None)


def test_only_an_engine_of_exactly_this_key_is_picked():
    found = verify(manifest())
    engine, reasons = engine_for(found, ENGINE_KEY)
    assert engine is not None and reasons == []
    from dataclasses import replace

    engine, reasons = engine_for(found, replace(ENGINE_KEY, platform="L4T R36.4.3"))
    assert engine is None and reasons == ["platform L4T R36.4.0 -> L4T R36.4.3"]
    odd = verify(manifest(engines=[{"key": dict(ENGINE_KEY.to_dict(), extra=1), "sha256": "e" * 64, "bytes": 1}]))
    assert engine_for(odd, ENGINE_KEY)[0] is None


@pytest.mark.parametrize("name, version", [("..", "1"), ("gate", ".."), ("a/../..", "1"), ("gate", "/etc")])
def test_staging_never_leaves_the_engine_cache(tmp_path, name, version):
    with pytest.raises(ManifestError, match="outside"):
        stage_dir(str(tmp_path), name, version)
    assert stage_dir(str(tmp_path), "gate", "3") == (tmp_path / "fleet" / "gate" / "3").resolve()


class _Server:
    """A real HTTP server on loopback; ``answer(handler)`` decides each answer."""

    def __init__(self, answer):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                seen.append((self.path, dict(self.headers)))
                answer(self)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def make(answer):
        servers.append(_Server(answer))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def _send(handler, status, body=b"", headers=()):
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def test_requests_carry_the_token_and_device_and_redirects_are_not_followed(serve):
    elsewhere = serve(lambda h: _send(h, 200, manifest()))
    fleet = serve(lambda h: _send(h, 302, headers=[("Location", elsewhere.url + "/steal")]))
    client = FleetClient(fleet.url, "device-token-0123456789", "edge-b")
    with pytest.raises(FleetRefused, match="302"):
        client.manifest("gate", "3")
    path, headers = fleet.seen[0]
    assert path == "/api/v1/devices/edge-b/models/gate/3/manifest"
    assert headers["Authorization"] == "Bearer device-token-0123456789" and headers["X-Edge-Device"] == "edge-b"
    assert elsewhere.seen == []  # the token never went anywhere else


def test_plain_http_is_refused_off_loopback():
    with pytest.raises(FleetRefused, match="https"):
        FleetClient("http://10.0.0.2:8090", "device-token-0123456789", "edge-b")


def test_a_download_stops_at_the_size_the_manifest_allows(serve, tmp_path):
    server = serve(lambda h: _send(h, 200, ONNX + b"more than promised"))
    client = FleetClient(server.url, "device-token-0123456789", "edge-b")
    with pytest.raises(FleetRefused, match=f"manifest says {len(ONNX)}"):
        client.download(hashlib.sha256(ONNX).hexdigest(), len(ONNX), tmp_path / "model.onnx")
    assert not list(tmp_path.iterdir())


def test_a_cut_download_resumes_with_a_range_and_a_full_answer_starts_over(serve, tmp_path):
    digest = hashlib.sha256(ONNX).hexdigest()
    answers = []

    def answer(handler):
        wanted = handler.headers.get("Range")
        answers.append(wanted)
        if len(answers) == 1:  # promises all, sends half, hangs up
            handler.send_response(200)
            handler.send_header("Content-Length", str(len(ONNX)))
            handler.end_headers()
            handler.wfile.write(ONNX[:len(ONNX) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        if len(answers) == 2:
            start = int(wanted.split("=")[1].rstrip("-"))
            _send(handler, 206, ONNX[start:], [("Content-Range", f"bytes {start}-{len(ONNX) - 1}/{len(ONNX)}")])
            return
        _send(handler, 200, ONNX)  # ignores the range: the client must start over

    server = serve(answer)
    client = FleetClient(server.url, "device-token-0123456789", "edge-b", timeout_s=5)
    progress = []
    dest = tmp_path / "model.onnx"
    with pytest.raises(FleetUnreachable, match="stopped at"):
        client.download(digest, len(ONNX), dest, progress.append)
    assert (tmp_path / "model.onnx.part").stat().st_size == len(ONNX) // 2
    client.download(digest, len(ONNX), dest, progress.append)
    assert dest.read_bytes() == ONNX and answers[1] == f"bytes={len(ONNX) // 2}-"
    assert progress[-1] == len(ONNX)
    # a part left over, and a service that sends everything again: still exactly the file
    dest.unlink()
    (tmp_path / "model.onnx.part").write_bytes(ONNX[:100])
    client.download(digest, len(ONNX), dest)
    assert dest.read_bytes() == ONNX and answers[2] == "bytes=100-"


def test_a_wrong_digest_removes_what_was_downloaded(serve, tmp_path):
    server = serve(lambda h: _send(h, 200, ONNX.replace(b"o", b"0", 1)))
    client = FleetClient(server.url, "device-token-0123456789", "edge-b")
    with pytest.raises(FleetRefused, match="does not match the SHA-256"):
        client.download(hashlib.sha256(ONNX).hexdigest(), len(ONNX), tmp_path / "model.onnx")
    assert not list(tmp_path.iterdir())


def test_the_state_reports_progress_in_steps_and_every_change_of_state():
    state = ModelsState()
    calls = []
    state.on_change(lambda: calls.append(state.snapshot()["gate"]))
    for step in range(101):
        state.set("gate", "3", "downloading", step / 100)
    assert 10 <= len(calls) <= 12 and calls[-1]["progress"] == 1.0
    state.set("gate", "3", "failed", reason="https://user:secret@fleet.example refused")
    assert calls[-1] == {"version": "3", "state": "failed", "progress": None,
                         "reason": "https://user:***@fleet.example refused"}


def test_a_failed_engine_offer_is_only_logged(serve, tmp_path, caplog):
    from edge_app.detect.tensorrt.cache import engine_paths, write_engine
    from edge_app.fleet_agent.artifacts.models import FleetModels

    paths = engine_paths(tmp_path, "model", ENGINE_KEY)
    write_engine(paths, b"engine bytes" * 10, ENGINE_KEY, {})
    offers = []
    server = serve(lambda h: _send(h, 503, b"busy"))
    server.server.RequestHandlerClass.do_PUT = lambda h: (offers.append(h.headers), _send(h, 503, b"busy"))
    models = FleetModels(lambda model, **options: None, lambda: None, ModelsState())
    models._offer(FleetClient(server.url, "device-token-0123456789", "edge-b"), paths.engine)
    assert "could not offer engine" in caplog.text and "503" in caplog.text
    assert offers[0]["X-Engine-Key"] == ENGINE_KEY.canonical_json()
    assert offers[0]["X-Content-SHA256"] == hashlib.sha256(b"engine bytes" * 10).hexdigest()
    # an engine changed after its build is not offered at all
    paths.engine.write_bytes(b"something else")
    models._offer(FleetClient(server.url, "device-token-0123456789", "edge-b"), paths.engine)
    assert len(offers) == 1 and "changed since it was built" in caplog.text


@pytest.mark.parametrize("answer, words", [
    (b"[1, 2, 3]", "not a JSON object"),
    (b"[" * 50_000 + b"]" * 50_000, "not JSON"),  # 100 KB: the first 64 KB are read, nested past Python's limit
    (b"\xff\xfe not json", "not JSON"),
    (b'{"stored": true}' + b" " * 70_000, "not JSON"),  # cut at the size read
])
def test_an_engine_offer_answered_with_something_else_than_an_object_is_only_logged(serve, tmp_path, caplog, answer, words):
    """The fleet service's answer is read by the thread that offers the engine: a list, deep
    nesting or bytes that are no JSON are logged as a failed offer, never raised out of it."""
    from edge_app.detect.tensorrt.cache import engine_paths, write_engine
    from edge_app.fleet_agent.artifacts.models import FleetModels

    paths = engine_paths(tmp_path, "model", ENGINE_KEY)
    write_engine(paths, b"engine bytes" * 10, ENGINE_KEY, {})
    server = serve(lambda h: _send(h, 404))
    server.server.RequestHandlerClass.do_PUT = lambda h: (h.rfile.read(int(h.headers["Content-Length"])),
                                                          _send(h, 200, answer))
    models = FleetModels(lambda model, **options: None, lambda: None, ModelsState())
    models._offer(FleetClient(server.url, "device-token-0123456789", "edge-b"), paths.engine)
    assert "could not offer engine" in caplog.text and words in caplog.text


@pytest.mark.parametrize("engine_mb, onnx_mb, fetched", [
    (10, 12, True),        # YOLOv8n: an FP16 engine is smaller than its FP32 ONNX
    (256, 1, True),        # a small model never refuses an engine under the floor
    (257, 1, False),
    (2000, 260, True),     # a large model's engine may be large
    (2100, 260, False),
    (2048, 0, False),      # a manifest without an ONNX size: the floor
])
def test_a_prebuilt_engine_far_larger_than_its_model_is_not_fetched(engine_mb, onnx_mb, fetched):
    """A prebuilt engine is read whole into memory to be deserialised: one offered far larger
    than its model (by any device allowed to offer engines) is built here instead."""
    from edge_app.fleet_agent.artifacts.models import prebuilt_too_large

    why = prebuilt_too_large(engine_mb * 1024 * 1024, onnx_mb * 1024 * 1024)
    assert (why is None) == fetched
    if why is not None:
        assert "building one here" in why and f"{engine_mb} MB" in why


def test_only_the_last_staged_versions_and_the_configured_ones_stay_on_the_device(tmp_path):
    """Every rollout stages a version (its ONNX, labels and engines): the older ones go, but never
    the three staged last nor one the configuration names (a rollback to it needs no download)."""
    import os

    from edge_app.fleet_agent.artifacts.stage import KEEP_VERSIONS, MANIFEST_FILE, prune_staged

    model_dir = tmp_path / "fleet" / "gate"
    for age, version in enumerate(["7", "6", "5", "4", "3", "2", "1"]):  # 1 staged first, 7 last
        folder = model_dir / version
        folder.mkdir(parents=True)
        (folder / "model.onnx").write_bytes(b"onnx")
        (folder / "model-fp16-b1-640x640.engine").write_bytes(b"engine")
        (folder / MANIFEST_FILE).write_bytes(b"{}")
        os.utime(folder / MANIFEST_FILE, (1_700_000_000 - age, 1_700_000_000 - age))
    (model_dir / "8").mkdir()  # a staging cut off before its manifest: the oldest of all
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (model_dir / "link").symlink_to(outside)  # never followed

    removed = prune_staged(model_dir, keep=["2"])
    assert KEEP_VERSIONS == 3
    assert sorted(removed) == ["1", "3", "4", "8"]
    assert sorted(p.name for p in model_dir.iterdir()) == ["2", "5", "6", "7", "link"]
    assert outside.is_dir()
    assert prune_staged(tmp_path / "fleet" / "nothing", keep=[]) == []


MiB = 1024 * 1024


@pytest.mark.parametrize("blob_mib,reserve_mib,fits", [
    (1.0, 1, True),
    (3.5, 1, False),  # 4 MiB - 3.5 MiB leaves less than the 1 MiB kept free
    (0.001, None, False),  # the default reserve (128 MiB) on a 64 MiB file system: nothing is fetched
])
def test_a_download_that_would_fill_the_disk_is_refused_before_anything_is_asked(serve, tmp_path, blob_mib,
                                                                                 reserve_mib, fits):
    """A real tmpfs stands for the device's small eMMC: the download checks the room first and,
    refused, asks the fleet for nothing and writes nothing."""
    blob = b"x" * int(blob_mib * MiB)
    server = serve(lambda h: _send(h, 200, blob))
    options = {} if reserve_mib is None else {"reserve_bytes": reserve_mib * MiB}
    client = FleetClient(server.url, "device-token-0123456789", "edge-b", **options)
    with mounted_tmpfs(tmp_path / "disk", "64m" if reserve_mib is None else "4m") as disk:
        dest = disk / "fleet" / "gate" / "3" / "model.onnx"
        if fits:
            client.download(hashlib.sha256(blob).hexdigest(), len(blob), dest)
            assert dest.read_bytes() == blob
            return
        with pytest.raises(NotEnoughSpace, match="not enough free space") as refused:
            client.download(hashlib.sha256(blob).hexdigest(), len(blob), dest)
        assert "MB are kept free" in str(refused.value)
        assert server.seen == [] and list(dest.parent.iterdir()) == []
