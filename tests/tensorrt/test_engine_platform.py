"""The platform in the engine key (L4T release or NVIDIA driver), and refusing engines of another device.

With the stand-in TensorRT (testkit/tensorrt_standin, NOT TensorRT: it implements the documented
TensorRT 10 Python API calls edge-app makes, its "engine" is the ONNX plus build metadata).
"""
from __future__ import annotations

import json
import logging
import shutil

import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt import prepare as prepare_module
from edge_app.detect.tensorrt.cache import read_sidecar
from edge_app.detect.tensorrt.platform import device_platform
from edge_app.detect.tensorrt.prepare import EngineCache
from edge_app.detect.tensorrt.runtime import EngineRuntime

TEGRA = "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n"
PROC = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:33:51 UTC 2025\nGCC version: gcc 12\n"


def test_platform_of_a_jetson_a_dgpu_and_neither(tmp_path):
    tegra, sysfs, proc = tmp_path / "nv_tegra_release", tmp_path / "version", tmp_path / "proc_version"
    assert device_platform(tegra, sysfs, proc) == "unknown"
    proc.write_text(PROC)
    assert device_platform(tegra, sysfs, proc) == "driver 580.65.06"
    sysfs.write_text("580.82.07\n")
    assert device_platform(tegra, sysfs, proc) == "driver 580.82.07"
    tegra.write_text(TEGRA)
    assert device_platform(tegra, sysfs, proc) == "L4T R35.4.1"


def _load(trt, model, device):
    cache = EngineCache(trt, model, device)
    runtime, prepared = cache.load(lambda data, label: EngineRuntime(trt, data, device, model.max_batch, label))
    return cache, prepared


def test_a_cache_entry_from_before_the_platform_was_recorded_is_rebuilt(standin_trt, host_device, make_model, caplog):
    model = make_model()
    cache, prepared = _load(standin_trt, model, host_device)
    assert prepared.source == "built"
    sidecar = json.loads(cache.paths.sidecar.read_text())
    del sidecar["key"]["platform"]
    cache.paths.sidecar.write_text(json.dumps(sidecar))
    caplog.set_level(logging.INFO, logger=prepare_module.__name__)
    cache, prepared = _load(standin_trt, model, host_device)
    assert prepared.source == "built"
    assert "before edge-app recorded the platform" in caplog.text
    assert "platform" in read_sidecar(cache.paths.sidecar)["key"]


def test_a_driver_upgrade_rebuilds(standin_trt, host_device, make_model, caplog, monkeypatch):
    model = make_model()
    _load(standin_trt, model, host_device)
    monkeypatch.setattr(prepare_module, "device_platform", lambda: "driver 999.1")
    caplog.set_level(logging.INFO, logger=prepare_module.__name__)
    cache, prepared = _load(standin_trt, model, host_device)
    assert prepared.source == "built" and "-> driver 999.1" in caplog.text


def test_a_user_engine_whose_sidecar_names_another_device_is_never_deserialised(standin_trt, host_device, make_model,
                                                                               tmp_path, monkeypatch):
    from edge_app.detect.tensorrt.backend import TensorRTDetector

    cache, _ = _load(standin_trt, make_model(), host_device)
    user_engine = tmp_path / "mine.engine"
    shutil.copy(cache.paths.engine, user_engine)
    sidecar = json.loads(cache.paths.sidecar.read_text())
    sidecar["key"].update(tensorrt_version="8.6.2", platform="L4T R35.4.1")
    (tmp_path / "mine.engine.json").write_text(json.dumps(sidecar))
    deserialised = []
    real_init = EngineRuntime.__init__
    monkeypatch.setattr(EngineRuntime, "__init__", lambda self, *a, **k: (deserialised.append(a), real_init(self, *a, **k))[1])
    with pytest.raises(DetectorError, match=r"built for another device \(TensorRT 8.6.2 -> 10.3.0; platform L4T R35.4.1 ->"):
        TensorRTDetector(make_model(path=str(user_engine)), device=host_device)
    assert deserialised == []
    # the same engine with a sidecar naming this device loads
    sidecar["key"].update(tensorrt_version="10.3.0", platform=device_platform())
    (tmp_path / "mine.engine.json").write_text(json.dumps(sidecar))
    detector = TensorRTDetector(make_model(path=str(user_engine)), device=host_device)
    try:
        assert detector.engine.source == "user" and len(deserialised) == 1
    finally:
        detector.close()
