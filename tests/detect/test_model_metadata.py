"""The rules both backends share about what a model file says of itself."""
import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.model_metadata import is_engine_file, metadata_bool, metadata_hw, resolve_input_hw


@pytest.mark.parametrize("path, expected", [
    ("engines/yolov8n.engine", True), ("a/B.PLAN", True), ("yolov8n.onnx", False), ("engine", False),
])
def test_engine_files_are_known_by_suffix(path, expected):
    assert is_engine_file(path) is expected


@pytest.mark.parametrize("value, expected", [
    ("true", True), (" False ", False), ("yes", None), (None, None),
])
def test_metadata_bool(value, expected):
    metadata = {} if value is None else {"end2end": value}
    assert metadata_bool(metadata, "end2end") is expected


@pytest.mark.parametrize("imgsz, expected", [
    ("[640, 640]", (640, 640)), ("[384, 640]", (384, 640)), ("512", (512, 512)),
    ("", None), ("[a, b]", None), ("[0, 640]", None), ("[1, 2, 3]", None),
])
def test_imgsz_metadata(imgsz, expected):
    assert metadata_hw({"imgsz": imgsz}) == expected


@pytest.mark.parametrize("static_hw, configured, default, metadata, expected", [
    ((640, 640), None, 640, {}, (640, 640)),              # the model's own size wins
    ((640, 640), 640, 640, {}, (640, 640)),               # a matching configured size is fine
    (None, 320, 640, {"imgsz": "[640, 640]"}, (320, 320)),  # written by the user beats metadata
    (None, None, 640, {"imgsz": "[384, 640]"}, (384, 640)),  # left out: the exporter's imgsz
    (None, None, 640, {}, (640, 640)),                    # nothing known: the default
    (None, None, None, {}, (640, 640)),                   # input_size: null and nothing known
])
def test_input_size_resolution(static_hw, configured, default, metadata, expected):
    assert resolve_input_hw(static_hw, configured, default, metadata, "m.onnx") == expected


def test_a_configured_size_that_contradicts_a_fixed_input_is_an_error():
    with pytest.raises(DetectorError, match="fixed 640x640 input but model.input_size is 320"):
        resolve_input_hw((640, 640), 320, 320, {}, "m.onnx")
