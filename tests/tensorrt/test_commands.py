"""`edge-app build-engine` and `edge-app selftest` bodies, with and without (stand-in) TensorRT."""
from __future__ import annotations

import pytest

from edge_app.commands import selftest
from edge_app.config.schema import AppConfig, ModelConfig
from edge_app.detect.tensorrt import commands
from edge_app.commands.selftest import compare_detections, selftest_command
from edge_app.detect.detections import Detections
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice


@pytest.fixture
def app_config(make_model):
    return AppConfig(model=make_model(max_batch=2).model_dump())


@pytest.fixture
def allow_standin(standin_trt, monkeypatch):
    """build-engine refuses the stand-in in real use; these tests let it through on purpose."""
    monkeypatch.setattr(commands, "is_standin", lambda trt: False)
    monkeypatch.setattr(commands, "open_device", lambda: HostMemoryCudaDevice())
    return standin_trt


def test_build_engine_builds_then_reuses(allow_standin, app_config, capsys):
    assert commands.build_engine_command(app_config, force=False) == 0
    out = capsys.readouterr()
    assert out.out.startswith("built engine ") and "batch 1..2, input 640x640, TensorRT 10.3.0" in out.out
    assert "engine ready" in out.err
    assert commands.build_engine_command(app_config, force=False) == 0
    assert capsys.readouterr().out.startswith("reused cached engine ")
    assert commands.build_engine_command(app_config, force=True) == 0
    assert capsys.readouterr().out.startswith("built engine ")


def test_build_engine_reports_a_bad_prebuilt_engine(allow_standin, make_model, tmp_path, capsys):
    bad = tmp_path / "x.engine"
    bad.write_bytes(b"junk" * 100)
    config = AppConfig(model=make_model(path=str(bad)).model_dump())
    assert commands.build_engine_command(config, force=False) == 1
    assert "could not be deserialised" in capsys.readouterr().err


def test_build_engine_refuses_the_standin(standin_trt, app_config, capsys):
    assert commands.build_engine_command(app_config, force=False) == 1
    assert "stand-in, not TensorRT" in capsys.readouterr().err


def test_build_engine_without_tensorrt(no_tensorrt, app_config, capsys):
    assert commands.build_engine_command(app_config, force=False) == 1
    err = capsys.readouterr().err
    assert err.startswith("edge-app: TensorRT is not installed") and "Traceback" not in err


@pytest.fixture
def no_gpu():
    if selftest.nvidia_gpu_present():
        pytest.skip("this machine has an NVIDIA GPU")


def test_selftest_without_a_gpu_runs_the_model_on_the_cpu_and_passes(no_tensorrt, no_gpu, model_path, bus_jpg, capsys):
    assert selftest_command(str(model_path), [bus_jpg]) == 0
    out = capsys.readouterr().out
    assert "SKIP  TensorRT: not applicable: no NVIDIA GPU on this machine" in out
    assert "SKIP  CUDA: not applicable: no NVIDIA GPU on this machine" in out
    header = out.splitlines()[0]
    assert "ONNX Runtime on the CPU" in header and "fp16" not in header
    assert "PASS  image bus.jpg: ONNX Runtime" in out and "person" in out
    assert "selftest passed: 0 of" in out


def test_selftest_without_a_gpu_fails_a_model_that_needs_tensorrt(no_tensorrt, no_gpu, model_path, capsys):
    assert selftest_command(ModelConfig(path=str(model_path), backend="tensorrt"), []) == 1
    out = capsys.readouterr().out
    assert "FAIL  TensorRT: not available - TensorRT is not installed" in out
    assert "backend tensorrt" in out.splitlines()[0]


def test_selftest_without_tensorrt_fails_plainly(no_tensorrt, model_path, bus_jpg, capsys, monkeypatch):
    monkeypatch.setattr(selftest, "nvidia_gpu_present", lambda: True)  # a GPU whose TensorRT is missing
    assert selftest_command(str(model_path), [bus_jpg]) == 1
    out = capsys.readouterr().out
    assert "FAIL  TensorRT: not available - TensorRT is not installed" in out
    assert "SKIP  engine build" in out and "selftest FAILED" in out


def test_selftest_does_not_mistake_the_standin_for_tensorrt(standin_trt, model_path, capsys):
    assert selftest_command(str(model_path), []) == 1
    assert "FAIL  TensorRT: the importable 'tensorrt' is the test suite's stand-in" in capsys.readouterr().out


def _dets(rows):
    rows = list(rows)
    return Detections([r[:4] for r in rows], [r[4] for r in rows], [r[5] for r in rows], ("person", "bus"))


def test_detection_comparison():
    ort = _dets([(0, 0, 100, 100, 0.9, 0), (200, 200, 300, 300, 0.3, 1)])
    close = _dets([(1, 1, 101, 100, 0.89, 0)])
    ok, summary = compare_detections(close, ort, 0.8)
    assert ok and "max box shift 1.0 px" in summary
    ok, summary = compare_detections(_dets([(0, 0, 100, 100, 0.9, 1)]), ort, 0.8)
    assert not ok and "1 confident ONNX Runtime detections missing, 1 unexpected" in summary
