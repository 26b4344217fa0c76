"""Live retuning (threshold and class changes without a reload) on both backends.

The TensorRT backend runs on the stand-in ``tensorrt`` module (testkit/tensorrt_standin, NOT
TensorRT: it executes the ONNX model with ONNX Runtime behind the documented engine API), so
what is checked here is the backend's own handling of the decoder settings.
"""
from __future__ import annotations

import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector
from edge_app.detect.tensorrt import TensorRTDetector


@pytest.fixture(params=["onnxruntime", "tensorrt"])
def detector(request, make_model):
    if request.param == "tensorrt":
        request.getfixturevalue("standin_trt")
        det = TensorRTDetector(make_model(max_batch=2), device=request.getfixturevalue("host_device"))
    else:
        det = OnnxRuntimeDetector(make_model(max_batch=2))
    yield det
    det.close()


@pytest.mark.parametrize(
    "tuning, persons, buses",
    [
        (dict(conf_threshold=0.9, classes=["bus"]), 0, 0),
        (dict(conf_threshold=0.25, classes=["bus"]), 0, 1),
        (dict(conf_threshold=0.8, classes=[]), 3, 1),
        (dict(conf_threshold=0.25, classes=["person"]), 4, 0),
    ],
)
def test_retune_takes_effect_on_the_next_batch(detector, bus_image, tuning, persons, buses):
    before = detector.detect([bus_image])[0]
    assert (before.count("person"), before.count("bus")) == (4, 1)

    detector.retune(**tuning)

    after = detector.detect([bus_image])[0]
    assert (after.count("person"), after.count("bus")) == (persons, buses)
    assert detector.conf_threshold == tuning["conf_threshold"]
    assert detector.classes == tuple(tuning["classes"])


def test_retune_with_an_unknown_class_changes_nothing(detector, bus_image):
    with pytest.raises(DetectorError, match="persn"):
        detector.retune(conf_threshold=0.9, iou_threshold=0.3, classes=["persn"])
    assert (detector.conf_threshold, detector.iou_threshold, detector.classes) == (0.25, 0.45, ())
    assert len(detector.detect([bus_image])[0]) == 5
