"""Engine build options through the stand-in TensorRT (NOT TensorRT; see tensorrt_standin):
parser errors, the 8.5 code path, precision, INT8 calibration, DLA, progress and cancelling."""
from __future__ import annotations

import logging
import shutil

import pytest

from edge_app.detect.tensorrt.build import EngineBuildError, describe_parser_error
from edge_app.detect.tensorrt.prepare import EngineCache
from edge_app.detect.tensorrt.progress import BuildStatus
from edge_app.detect.tensorrt.runtime import EngineRuntime
from tests.tensorrt import onnx_models


def _build(trt, model, device, progress=None, force=False):
    cache = EngineCache(trt, model, device, progress)
    runtime, prepared = cache.load(lambda data, label: EngineRuntime(trt, data, device, model.max_batch, label), force=force)
    return cache, runtime, prepared


def _engine_header(cache):
    from tensorrt import _format  # the stand-in's own file format

    header, _, problem = _format.unpack(cache.paths.engine.read_bytes())
    assert header is not None, problem
    return header


def test_build_settings_reach_the_builder(standin_trt, host_device, make_model):
    cache, runtime, _ = _build(standin_trt, make_model(max_batch=3, workspace_mb=256), host_device)
    header = _engine_header(cache)
    assert header["precision"] == {"fp16": True, "int8": False}
    assert header["workspace_bytes"] == 256 << 20
    assert header["profiles"] == [{"images": [[1, 3, 640, 640], [3, 3, 640, 640], [3, 3, 640, 640]]}]
    assert header["device"] == "GPU"
    assert runtime.dynamic_batch and runtime.max_batch == 3


def test_parser_errors_name_node_and_operator(standin_trt, host_device, make_model, model_path, tmp_path):
    broken = onnx_models.with_custom_op(model_path, tmp_path / "broken.onnx")
    with pytest.raises(EngineBuildError) as err:
        _build(standin_trt, make_model(path=str(broken)), host_device)
    message = str(err.value)
    assert "ONNX parser rejected" in message
    assert "node 233 'mystery_node' (MyCustomOp)" in message
    assert "No importer registered for op: MyCustomOp" in message


def test_parser_errors_on_tensorrt_8_5_take_the_operator_from_the_onnx_graph(standin_trt, host_device, make_model,
                                                                              model_path, tmp_path, monkeypatch):
    monkeypatch.setattr(standin_trt, "__version__", "8.5.2")
    broken = onnx_models.with_custom_op(model_path, tmp_path / "broken.onnx")
    with pytest.raises(EngineBuildError, match=r"node 233 'mystery_node' \(MyCustomOp\)"):
        _build(standin_trt, make_model(path=str(broken)), host_device)


def test_describe_parser_error_without_a_node():
    class Error:
        def node(self):
            return -1

        def desc(self):
            return "Failed to parse ONNX model from file"

    assert describe_parser_error(Error()) == "the model: Failed to parse ONNX model from file"


def test_tensorrt_8_5_builds_with_explicit_batch_and_a_heartbeat(standin_trt, host_device, make_model, monkeypatch):
    """JetPack 5.1: the explicit-batch flag is required and there is no IProgressMonitor."""
    monkeypatch.setattr(standin_trt, "__version__", "8.5.2")
    monkeypatch.setattr("edge_app.detect.tensorrt.progress.HEARTBEAT_S", 0.01)
    assert not hasattr(standin_trt, "IProgressMonitor")
    status = BuildStatus()
    _, runtime, prepared = _build(standin_trt, make_model(), host_device, progress=status)
    assert prepared.source == "built" and runtime.max_batch == 4
    assert status.snapshot()["state"] == "done"


def test_progress_reaches_the_status_callback_monotonically(standin_trt, host_device, make_model):
    reports = []
    _build(standin_trt, make_model(), host_device, progress=reports.append)
    assert reports[0].state == "building" and reports[-1].state == "done"
    fractions = [r.fraction for r in reports if r.state == "building"]
    assert fractions == sorted(fractions) and max(fractions) == pytest.approx(1.0)
    assert any("Tactic selection" in r.phase for r in reports)
    snapshot = BuildStatus()
    snapshot(reports[len(reports) // 2])
    assert set(snapshot.snapshot()) >= {"model", "state", "phase", "percent", "elapsed_s"}


def test_cancelled_build_is_a_clear_error(standin_trt, host_device, make_model):
    """E.g. the appliance shutting down mid-build: the next step_complete returns False."""
    model = make_model()
    cache = EngineCache(standin_trt, model, host_device, progress=lambda report: cache.cancel())
    with pytest.raises(EngineBuildError, match="cancelled"):
        cache.load(lambda data, label: EngineRuntime(standin_trt, data, host_device, 4, label))
    assert not cache.paths.engine.exists()


def test_fp16_falls_back_to_fp32_where_the_gpu_is_not_fast_at_it(standin_trt, host_device, make_model, monkeypatch, caplog):
    monkeypatch.setattr(standin_trt.Builder, "simulated_fast_fp16", False)
    cache, _, _ = _build(standin_trt, make_model(), host_device)
    assert _engine_header(cache)["precision"] == {"fp16": False, "int8": False}
    assert "no fast FP16" in caplog.text


@pytest.fixture
def calib_dir(tmp_path, bus_jpg, zidane_jpg):
    folder = tmp_path / "calib"
    folder.mkdir()
    for i in range(5):
        shutil.copy(bus_jpg, folder / f"bus{i}.jpg")
        shutil.copy(zidane_jpg, folder / f"zidane{i}.jpg")
    return folder


def test_int8_calibrates_from_the_folder_and_reuses_the_cache(standin_trt, host_device, make_model, calib_dir):
    model = make_model(precision="int8", calibration_dir=str(calib_dir), max_batch=4)
    cache, _, _ = _build(standin_trt, model, host_device)
    calibration = _engine_header(cache)["calibration"]
    assert calibration["from_cache"] is False
    assert calibration["batches"] == 2 and calibration["batch_size"] == 4  # 10 images -> 2 whole batches
    assert 0.0 <= calibration["min"] and calibration["max"] <= 1.0  # letterboxed, normalised like run time
    caches = list(cache.engine_dir.glob("*.calib"))
    assert len(caches) == 1
    cache, _, _ = _build(standin_trt, model, host_device, force=True)
    assert _engine_header(cache)["calibration"]["from_cache"] is True
    sidecar = cache.paths.sidecar.read_text()
    assert '"applied_precision": "int8"' in sidecar and caches[0].name in sidecar


def test_int8_without_calibration_images_is_refused(standin_trt, host_device, make_model):
    with pytest.raises(EngineBuildError, match="calibration_dir"):
        _build(standin_trt, make_model(precision="int8"), host_device)


def test_dla_core_with_gpu_fallback(standin_trt, host_device, make_model, monkeypatch):
    monkeypatch.setattr(standin_trt.Builder, "simulated_dla_cores", 2)
    cache, _, _ = _build(standin_trt, make_model(dla_core=1), host_device)
    assert cache.paths.engine.name.endswith("-dla1.engine")
    assert _engine_header(cache)["device"] == "DLA:1+GPU fallback"


def test_dla_core_that_does_not_exist_builds_for_the_gpu(standin_trt, host_device, make_model, caplog):
    caplog.set_level(logging.WARNING)
    cache, _, _ = _build(standin_trt, make_model(dla_core=0), host_device)
    assert _engine_header(cache)["device"] == "GPU"
    assert "0 DLA cores" in caplog.text
