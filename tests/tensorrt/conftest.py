"""Fixtures for the TensorRT backend's CPU tests.

``standin_trt`` puts the stand-in ``tensorrt`` package (testkit/tensorrt_standin, NOT TensorRT)
on sys.path for one test and removes it afterwards, so nothing else in the suite can import it
by accident. ``host_device`` is the host-memory stand-in of the CUDA layer.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

STANDIN_DIR = Path(__file__).resolve().parents[2] / "testkit" / "tensorrt_standin"


def _forget_tensorrt() -> None:
    for name in [n for n in sys.modules if n == "tensorrt" or n.startswith("tensorrt.")]:
        del sys.modules[name]


@pytest.fixture
def standin_trt(monkeypatch):
    _forget_tensorrt()
    monkeypatch.syspath_prepend(str(STANDIN_DIR))
    import tensorrt

    assert tensorrt.IS_STANDIN, "the stand-in must be the tensorrt module these tests use"
    yield tensorrt
    _forget_tensorrt()


@pytest.fixture
def no_tensorrt(monkeypatch):
    """Makes `import tensorrt` fail even if some tensorrt is installed."""
    _forget_tensorrt()
    monkeypatch.setitem(sys.modules, "tensorrt", None)
    yield
    _forget_tensorrt()


@pytest.fixture
def host_device():
    from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice

    return HostMemoryCudaDevice()


@pytest.fixture
def make_model(tmp_path, model_path):
    """ModelConfig factory with engine_dir in tmp_path; keyword arguments override fields."""
    from edge_app.config.schema import ModelConfig

    def factory(**overrides) -> "ModelConfig":
        # engine_process off unless asked: "auto" would follow whether this machine runs MPS
        values = {"path": str(model_path), "engine_dir": str(tmp_path / "engines"), "max_batch": 4,
                  "engine_process": False}
        values.update(overrides)
        return ModelConfig(**values)

    return factory


@pytest.fixture(scope="session")
def bus_image(bus_jpg):
    import cv2

    return cv2.imread(str(bus_jpg))


@pytest.fixture(scope="session")
def zidane_image(zidane_jpg):
    import cv2

    return cv2.imread(str(zidane_jpg))
