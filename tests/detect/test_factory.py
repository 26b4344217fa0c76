"""Backend choice, load errors users will meet, and image loading."""
import logging
import os

import numpy as np
import pytest
from onnx import TensorProto

from edge_app.config.schema import ModelConfig
from edge_app.detect.base import Detector, DetectorError
from edge_app.detect.factory import available_backends, choose_backend, create_detector
from edge_app.detect.image_io import ImageReadError, load_image
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector
from tests.detect.onnx_models import build_model


@pytest.fixture
def tiny_model(tmp_path):
    """A fixed 1x3x320x320 model with a YOLOv8-shaped output."""
    return build_model(tmp_path / "tiny320.onnx")


class _FakeTensorRT(Detector):
    """Stands in for the TensorRT backend; registered by the tests themselves, not on import."""

    available = True
    fail_with = None

    def __init__(self, model, **options):
        if self.fail_with:
            raise self.fail_with
        self.model = model

    @classmethod
    def is_available(cls):
        return cls.available

    def preprocess(self, frames):
        raise NotImplementedError

    def infer(self, batch):
        raise NotImplementedError

    def postprocess(self, outputs, batch):
        raise NotImplementedError


@pytest.fixture
def fake_tensorrt(monkeypatch):
    available_backends()  # import a real TensorRT backend first, so the patch below is undone cleanly
    fake = type("FakeTensorRT", (_FakeTensorRT,), {"available": True, "fail_with": None})
    fake.backend_name = "tensorrt"
    monkeypatch.setitem(Detector._backends, "tensorrt", fake)
    return fake


def test_available_backends_lists_onnxruntime():
    backends = available_backends()
    assert backends["onnxruntime"] is True and "tensorrt" in backends


def test_auto_uses_onnxruntime_without_tensorrt(tiny_model):
    if available_backends()["tensorrt"]:
        pytest.skip("TensorRT is installed here")
    detector = create_detector(ModelConfig(path=str(tiny_model), input_size=None))
    assert isinstance(detector, OnnxRuntimeDetector)


@pytest.mark.parametrize(
    "backend, path, available, expected",
    [
        ("auto", "m.onnx", True, "tensorrt"),
        ("auto", "m.onnx", False, "onnxruntime"),
        ("auto", "m.engine", True, "tensorrt"),
        ("auto", "m.plan", True, "tensorrt"),
        ("tensorrt", "m.onnx", True, "tensorrt"),
        ("onnxruntime", "m.onnx", True, "onnxruntime"),
    ],
)
def test_choose_backend(fake_tensorrt, backend, path, available, expected):
    fake_tensorrt.available = available
    assert choose_backend(ModelConfig(path=path, backend=backend)) == expected


@pytest.mark.parametrize(
    "backend, path, message",
    [
        ("tensorrt", "m.onnx", "TensorRT is not installed"),
        ("auto", "m.engine", "TensorRT is not installed"),
        ("onnxruntime", "m.engine", "ONNX Runtime cannot run the TensorRT engine"),
    ],
)
def test_unusable_backend_choice_is_a_clear_error(fake_tensorrt, backend, path, message):
    fake_tensorrt.available = False
    with pytest.raises(DetectorError, match=message):
        choose_backend(ModelConfig(path=path, backend=backend))


def test_backend_crash_becomes_detector_error(fake_tensorrt):
    fake_tensorrt.fail_with = RuntimeError("no CUDA device")
    with pytest.raises(DetectorError, match="tensorrt backend could not load m.onnx.*no CUDA device"):
        create_detector(ModelConfig(path="m.onnx", backend="tensorrt"))


def test_missing_model_file(tmp_path):
    with pytest.raises(DetectorError, match=r"model file .*missing\.onnx does not exist"):
        create_detector(ModelConfig(path=str(tmp_path / "missing.onnx"), backend="onnxruntime"))


@pytest.mark.parametrize("content", [os.urandom(4096), b""])
def test_corrupt_model_file(tmp_path, content):
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(content)
    with pytest.raises(DetectorError, match=r"corrupt\.onnx could not be loaded as an ONNX model") as err:
        create_detector(ModelConfig(path=str(path), backend="onnxruntime"))
    assert "\n" not in str(err.value)


def test_fixed_size_model_with_another_input_size(tiny_model):
    with pytest.raises(DetectorError, match="fixed 320x320 input but model.input_size is 640; set input_size to 320"):
        OnnxRuntimeDetector(ModelConfig(path=str(tiny_model), input_size=640))


@pytest.mark.parametrize("settings", [{}, {"input_size": None}, {"input_size": 320}])
def test_fixed_size_model_size_is_read_from_the_model(tiny_model, settings):
    detector = OnnxRuntimeDetector(ModelConfig(path=str(tiny_model), **settings))
    assert detector.input_hw == (320, 320)
    black = np.zeros((240, 320, 3), np.uint8)  # a black frame makes the tiny model output zeros
    assert len(detector.detect([black])[0]) == 0


def test_dynamic_size_model_takes_the_configured_size(tmp_path):
    path = build_model(tmp_path / "dyn.onnx", input_shape=("batch", 3, "height", "width"), output_shape=(1, 84, 2100),
                       metadata={"imgsz": "[320, 320]"})
    assert OnnxRuntimeDetector(ModelConfig(path=str(path), input_size=None)).input_hw == (320, 320)
    assert OnnxRuntimeDetector(ModelConfig(path=str(path), input_size=480)).input_hw == (480, 480)


def test_fixed_batch_of_one_forces_max_batch(tiny_model, caplog):
    with caplog.at_level(logging.INFO, logger="edge_app.detect.onnxruntime_backend"):
        detector = OnnxRuntimeDetector(ModelConfig(path=str(tiny_model), input_size=None, max_batch=8))
    assert detector.max_batch == 1
    assert any("fixed batch of 1" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "options",
    [
        {"input_shape": (1, 1, 320, 320)},  # greyscale input
        {"input_shape": (1, 3, 320)},  # not an image tensor
        {"input_type": TensorProto.UINT8},  # raw bytes in, not the float tensor we send
        {"extra_input": True},  # e.g. RT-DETR's orig_target_sizes
    ],
)
def test_model_with_unexpected_input(tmp_path, options):
    path = build_model(tmp_path / "odd.onnx", **options)
    with pytest.raises(DetectorError, match="expected one float image input shaped N x 3 x H x W"):
        OnnxRuntimeDetector(ModelConfig(path=str(path), input_size=None))


def test_model_with_unknown_outputs(tmp_path):
    path = build_model(tmp_path / "odd.onnx", output_shape=(1, 1000))
    with pytest.raises(DetectorError, match="outputs the YOLO decoder does not understand"):
        OnnxRuntimeDetector(ModelConfig(path=str(path), input_size=None))


def test_load_image(bus_jpg):
    image = load_image(bus_jpg)
    assert image.shape == (1080, 810, 3) and image.dtype == np.uint8


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.write_bytes(b"not a jpeg"), "is not a readable image file"),
        (lambda p: p.write_bytes(b""), "is not a readable image file"),
        (lambda p: p.mkdir(), "is not a file"),
    ],
)
def test_load_image_errors(tmp_path, setup, message):
    path = tmp_path / "x.jpg"
    setup(path)
    with pytest.raises(ImageReadError, match=message):
        load_image(path)
