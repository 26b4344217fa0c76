"""Engine cache decisions end to end with the stand-in TensorRT (NOT TensorRT; see tensorrt_standin).

Every stale or damaged cache must lead to a rebuild with exactly one log line saying why, and
the detector must come up working - never a crash.
"""
from __future__ import annotations

import json
import logging
import shutil
import threading
import time

import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt import prepare as prepare_module
from edge_app.detect.tensorrt.cache import read_sidecar
from edge_app.detect.tensorrt.prepare import EngineCache
from edge_app.detect.tensorrt.runtime import EngineRuntime
from tests.tensorrt import onnx_models
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice

PREPARE_LOGGER = "edge_app.detect.tensorrt.prepare"


def _load(trt, model, device, force=False):
    cache = EngineCache(trt, model, device)
    runtime, prepared = cache.load(lambda data, label: EngineRuntime(trt, data, device, model.max_batch, label), force=force)
    return cache, runtime, prepared


def _build_lines(caplog):
    return [r for r in caplog.records if r.name == PREPARE_LOGGER and "building TensorRT engine" in r.getMessage()]


@pytest.fixture
def built(standin_trt, host_device, make_model, caplog):
    """A first build into the cache; returns (model config, cache)."""
    caplog.set_level(logging.INFO, logger=PREPARE_LOGGER)
    model = make_model()
    cache, runtime, prepared = _load(standin_trt, model, host_device)
    assert prepared.source == "built"
    caplog.clear()
    return model, cache


def test_first_load_builds_and_says_so_once(standin_trt, host_device, make_model, caplog):
    caplog.set_level(logging.INFO, logger=PREPARE_LOGGER)
    model = make_model()
    cache, runtime, prepared = _load(standin_trt, model, host_device)
    assert prepared.source == "built" and cache.paths.engine.is_file() and cache.paths.sidecar.is_file()
    lines = _build_lines(caplog)
    assert len(lines) == 1 and lines[0].levelno == logging.INFO and "no cached engine" in lines[0].getMessage()
    sidecar = read_sidecar(cache.paths.sidecar)
    assert sidecar["key"]["tensorrt_version"] == "10.3.0"
    assert sidecar["key"]["gpu_name"] == host_device.name
    assert sidecar["model"]["metadata"]["imgsz"] == "[640, 640]"
    assert sidecar["build"]["applied_precision"] == "fp16"
    assert not cache.paths.lock.exists() or cache.paths.lock.stat().st_size == 0


def test_second_load_reuses_the_cache_without_building(built, standin_trt, host_device, caplog, monkeypatch):
    model, _ = built
    monkeypatch.setattr(prepare_module, "build_engine", lambda *a, **k: pytest.fail("must not build"))
    _, runtime, prepared = _load(standin_trt, model, host_device)
    assert prepared.source == "cache"
    assert prepared.metadata["imgsz"] == "[640, 640]"
    assert _build_lines(caplog) == []


def _assert_one_rebuild(caplog, prepared, *words):
    assert prepared.source == "built"
    lines = _build_lines(caplog)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    for word in words:
        assert word in lines[0].getMessage()
    warnings = [r for r in caplog.records if r.name == PREPARE_LOGGER and r.levelno >= logging.WARNING]
    assert warnings == lines


def test_changed_onnx_rebuilds(built, standin_trt, host_device, make_model, model_path, tmp_path, caplog):
    model, _ = built
    copy = tmp_path / "yolov8n_coco_dynbatch.onnx"
    shutil.copy(model_path, copy)
    first = make_model(path=str(copy))
    _load(standin_trt, first, host_device)
    caplog.clear()
    onnx_models.with_metadata(model_path, copy, "retrained", "yes")
    _, _, prepared = _load(standin_trt, first, host_device)
    _assert_one_rebuild(caplog, prepared, "the ONNX file changed")


def test_tensorrt_upgrade_rebuilds(built, standin_trt, host_device, caplog, monkeypatch):
    model, _ = built
    monkeypatch.setattr(standin_trt, "__version__", "10.7.0")
    _, _, prepared = _load(standin_trt, model, host_device)
    _assert_one_rebuild(caplog, prepared, "TensorRT 10.3.0 -> 10.7.0")


def test_other_gpu_rebuilds(built, standin_trt, caplog):
    model, _ = built
    _, _, prepared = _load(standin_trt, model, HostMemoryCudaDevice(name="Xavier", compute_capability=(7, 2)))
    _assert_one_rebuild(caplog, prepared, "GPU host-memory stand-in (no GPU) -> Xavier", "compute capability 0.0 -> 7.2")


def test_other_precision_gets_its_own_engine(built, standin_trt, host_device, make_model, caplog):
    model, first_cache = built
    cache, _, prepared = _load(standin_trt, make_model(precision="fp32"), host_device)
    assert prepared.source == "built" and cache.paths.engine != first_cache.paths.engine
    assert "no cached engine" in _build_lines(caplog)[0].getMessage()
    assert first_cache.paths.engine.is_file()  # switching back needs no rebuild


def test_truncated_engine_rebuilds(built, standin_trt, host_device, caplog):
    model, cache = built
    data = cache.paths.engine.read_bytes()
    cache.paths.engine.write_bytes(data[: len(data) // 2])
    _, _, prepared = _load(standin_trt, model, host_device)
    _assert_one_rebuild(caplog, prepared, "truncated")


def test_corrupt_engine_rebuilds(built, standin_trt, host_device, caplog):
    model, cache = built
    data = bytearray(cache.paths.engine.read_bytes())
    data[len(data) // 2] ^= 0x5A
    cache.paths.engine.write_bytes(bytes(data))
    _, _, prepared = _load(standin_trt, model, host_device)
    _assert_one_rebuild(caplog, prepared, "checksum")


def test_corrupt_sidecar_rebuilds(built, standin_trt, host_device, caplog):
    model, cache = built
    cache.paths.sidecar.write_text('{"schema": 1, "engine": ')
    _, _, prepared = _load(standin_trt, model, host_device)
    _assert_one_rebuild(caplog, prepared, "sidecar", "corrupt")


def test_engine_that_fails_to_deserialise_rebuilds(built, standin_trt, host_device, caplog):
    """Sidecar and checksum agree, yet TensorRT refuses the file (e.g. a plugin library went away)."""
    model, cache = built
    garbage = b"not an engine at all" * 10
    cache.paths.engine.write_bytes(garbage)
    sidecar = json.loads(cache.paths.sidecar.read_text())
    import hashlib
    sidecar["engine"].update(bytes=len(garbage), sha256=hashlib.sha256(garbage).hexdigest())
    cache.paths.sidecar.write_text(json.dumps(sidecar))
    _, runtime, prepared = _load(standin_trt, model, host_device)
    _assert_one_rebuild(caplog, prepared, "did not deserialise")
    assert runtime.max_batch == 4


def test_force_rebuilds_a_good_cache(built, standin_trt, host_device, caplog):
    model, _ = built
    _, _, prepared = _load(standin_trt, model, host_device, force=True)
    _assert_one_rebuild(caplog, prepared, "--force")


def test_timing_cache_is_saved_and_reused(built, standin_trt, host_device):
    model, cache = built
    timing = list(cache.engine_dir.glob("*.timing-cache"))
    assert len(timing) == 1
    first = json.loads(timing[0].read_text())["entries"]
    _load(standin_trt, model, host_device, force=True)
    assert json.loads(timing[0].read_text())["entries"] == 2 * first


def test_two_builders_at_once_build_only_once(standin_trt, make_model, monkeypatch, caplog):
    """Two loaders race for a missing engine: the file lock makes the second wait and reuse."""
    caplog.set_level(logging.INFO, logger=PREPARE_LOGGER)
    model = make_model()
    real_build = prepare_module.build_engine
    calls = []

    def slow_build(*args, **kwargs):
        calls.append(threading.get_ident())
        time.sleep(0.5)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(prepare_module, "build_engine", slow_build)
    sources, errors = [], []

    def worker():
        try:
            sources.append(_load(standin_trt, model, HostMemoryCudaDevice())[2].source)
        except Exception as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert len(calls) == 1
    assert sorted(sources) == ["built", "cache"]


def test_cache_dir_that_cannot_be_created_is_a_clear_error(standin_trt, host_device, make_model, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DetectorError, match="engine_dir"):
        _load(standin_trt, make_model(engine_dir=str(blocker / "engines")), host_device)
