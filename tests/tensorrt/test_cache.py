"""The engine cache's key, files and staleness decisions (pure functions, no TensorRT needed)."""
from __future__ import annotations

import json
import struct
from dataclasses import replace

import pytest

from edge_app.detect.tensorrt.cache import (EngineKey, check_cached_engine, engine_paths, read_sidecar,
                                            split_ultralytics_header, timing_cache_path, write_engine)

KEY = EngineKey(onnx_sha256="a" * 64, tensorrt_version="10.3.0", gpu_name="Orin", compute_capability="8.7",
                precision="fp16", max_batch=4, input_size=(640, 640), dla_core=None, platform="L4T R36.4.0")
ENGINE = b"\x01engine-bytes\x02" * 100


@pytest.fixture
def stored(tmp_path):
    paths = engine_paths(tmp_path, "yolov8n", KEY)
    write_engine(paths, ENGINE, KEY, {"model": {"metadata": {"names": "{0: 'person'}"}}})
    return paths


def test_key_round_trips_through_json():
    data = json.loads(json.dumps(KEY.to_dict()))
    assert EngineKey.from_dict(data) == KEY


@pytest.mark.parametrize("gpu_name", ["Orin", "NVIDIA H100 80GB HBM3", "Grafikkarte für Tests"])
def test_the_key_text_sent_to_the_fleet_is_the_canonical_text_the_service_stores(gpu_name):
    """The appliance offers and looks up engines by ``EngineKey.canonical_json`` (X-Engine-Key);
    the fleet service stores them under ``canonical_json`` of the parsed key: one text, byte for byte."""
    from edge_app.canonical_json import canonical_json

    key = replace(KEY, gpu_name=gpu_name)
    sent = key.canonical_json()
    assert sent == canonical_json(json.loads(sent))
    assert sent.isascii() and EngineKey.from_dict(json.loads(sent)) == key


@pytest.mark.parametrize("change, words", [
    ({"onnx_sha256": "b" * 64}, "the ONNX file changed"),
    ({"tensorrt_version": "10.4.0"}, "TensorRT 10.3.0 -> 10.4.0"),
    ({"gpu_name": "Xavier"}, "GPU Orin -> Xavier"),
    ({"compute_capability": "7.2"}, "compute capability 8.7 -> 7.2"),
    ({"precision": "int8"}, "precision fp16 -> int8"),
    ({"max_batch": 8}, "max_batch 4 -> 8"),
    ({"input_size": (480, 640)}, "input size 640x640 -> 640x480"),
    ({"dla_core": 0}, "DLA core none -> 0"),
    ({"platform": "L4T R36.4.3"}, "platform L4T R36.4.0 -> L4T R36.4.3"),
])
def test_every_key_field_is_a_reason_to_rebuild(change, words):
    reasons = replace(KEY, **change).differences(KEY)
    assert reasons == [words]


def test_file_names_carry_the_configuration_not_the_environment(tmp_path):
    paths = engine_paths(tmp_path, "yolo v8n", KEY)
    assert paths.engine.name == "yolo_v8n-fp16-b4-640x640.engine"
    assert paths.sidecar.name == "yolo_v8n-fp16-b4-640x640.engine.json"
    assert paths.lock.name == "yolo_v8n-fp16-b4-640x640.engine.lock"
    assert engine_paths(tmp_path, "m", replace(KEY, dla_core=1)).engine.name == "m-fp16-b4-640x640-dla1.engine"
    # an upgrade keeps the name, so the stale engine is replaced rather than left behind
    assert engine_paths(tmp_path, "m", replace(KEY, tensorrt_version="10.4.0")).engine == engine_paths(tmp_path, "m", KEY).engine


def test_timing_cache_is_per_tensorrt_version_and_gpu(tmp_path):
    a = timing_cache_path(tmp_path, "10.3.0", "Orin", "8.7")
    assert a.suffix == ".timing-cache"
    assert a != timing_cache_path(tmp_path, "10.4.0", "Orin", "8.7")
    assert a != timing_cache_path(tmp_path, "10.3.0", "NVIDIA H200", "9.0")


def test_a_matching_cached_engine_is_usable(stored):
    check = check_cached_engine(stored, KEY)
    assert check.usable and check.engine == ENGINE
    assert check.sidecar["model"]["metadata"]["names"] == "{0: 'person'}"


def test_missing_engine(tmp_path):
    check = check_cached_engine(engine_paths(tmp_path, "m", KEY), KEY)
    assert not check.usable and "no cached engine" in check.reason


def test_engine_without_sidecar(stored):
    stored.sidecar.unlink()
    check = check_cached_engine(stored, KEY)
    assert not check.usable and "no sidecar" in check.reason


@pytest.mark.parametrize("content, words", [
    ("{not json", "not valid JSON"),
    ('{"schema": 99}', "known schema"),
    ('{"schema": 1, "engine": {"bytes": 5, "sha256": "x"}}', "no key"),
    ('{"schema": 1, "engine": {"bytes": 5, "sha256": "x"}, "key": {"precision": "fp16"}}', "key misses"),
    ('[1, 2]', "known schema"),
])
def test_corrupt_sidecar_means_rebuild(stored, content, words):
    stored.sidecar.write_text(content)
    check = check_cached_engine(stored, KEY)
    assert not check.usable
    assert "sidecar" in check.reason and "corrupt" in check.reason and words in check.reason


def test_key_mismatch_is_reported_with_all_reasons(stored):
    wanted = replace(KEY, tensorrt_version="10.7.0", gpu_name="Xavier")
    check = check_cached_engine(stored, wanted)
    assert not check.usable
    assert check.reason == "TensorRT 10.3.0 -> 10.7.0; GPU Orin -> Xavier"


def test_truncated_engine(stored):
    stored.engine.write_bytes(ENGINE[:100])
    check = check_cached_engine(stored, KEY)
    assert not check.usable and "truncated" in check.reason and f"100 of {len(ENGINE)}" in check.reason


def test_corrupt_engine_of_the_right_size(stored):
    data = bytearray(ENGINE)
    data[500] ^= 0xFF
    stored.engine.write_bytes(bytes(data))
    check = check_cached_engine(stored, KEY)
    assert not check.usable and "checksum" in check.reason


def test_sidecar_records_size_and_checksum(stored):
    data = read_sidecar(stored.sidecar)
    assert data["engine"]["bytes"] == len(ENGINE)
    assert data["key"] == KEY.to_dict()


def test_ultralytics_header_is_split_off():
    meta = json.dumps({"names": {"0": "person"}, "imgsz": [640, 640]}).encode()
    data = struct.pack("<i", len(meta)) + meta + ENGINE
    header, engine = split_ultralytics_header(data)
    assert header["imgsz"] == [640, 640] and engine == ENGINE


@pytest.mark.parametrize("data", [ENGINE, b"", b"\x00\x00\x00\x00rest-of-engine", struct.pack("<i", 10) + b"not-json!!" + ENGINE])
def test_plain_engines_come_back_unchanged(data):
    assert split_ultralytics_header(data) == (None, data)
