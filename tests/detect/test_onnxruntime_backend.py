"""The real YOLOv8n COCO models against the ground truth in shared/models/README.md."""
import numpy as np
import pytest

from edge_app.config.schema import ModelConfig
from edge_app.detect.base import DetectorError
from edge_app.detect.image_io import load_image
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector, usable_cpu_count


@pytest.fixture(scope="module")
def detector(model_path):
    """Loaded once for the module: the CPU is shared and a load costs a few hundred ms."""
    det = OnnxRuntimeDetector(ModelConfig(path=str(model_path), max_batch=4, conf_threshold=0.25, iou_threshold=0.45))
    yield det
    det.close()


@pytest.fixture(scope="module")
def bus(bus_jpg):
    return load_image(bus_jpg)


@pytest.fixture(scope="module")
def zidane(zidane_jpg):
    return load_image(zidane_jpg)


@pytest.fixture(scope="module")
def singles(detector, bus, zidane):
    return detector.detect([bus])[0], detector.detect([zidane])[0]


def assert_inside(detections, image):
    height, width = image.shape[:2]
    assert np.all(detections.xyxy >= 0)
    assert np.all(detections.xyxy[:, [0, 2]] <= width) and np.all(detections.xyxy[:, [1, 3]] <= height)
    assert np.all(detections.xyxy[:, 2] > detections.xyxy[:, 0]) and np.all(detections.xyxy[:, 3] > detections.xyxy[:, 1])


def test_bus_has_four_persons_and_one_bus(singles, bus):
    found = singles[0]
    assert found.count("person") == 4 and found.count("bus") == 1 and len(found) == 5
    assert found.count("person", min_confidence=0.8) == 3 and found.count("bus", min_confidence=0.8) == 1
    assert_inside(found, bus)
    bus_box = found.xyxy[found.class_id == 5][0]
    assert bus_box[2] - bus_box[0] > 600  # the bus spans most of the 810 px width


def test_zidane_has_two_confident_persons(singles, zidane):
    found = singles[1]
    persons = found.confidence[found.class_id == 0]
    assert len(persons) == 2 and np.all(persons > 0.8)
    assert_inside(found, zidane)


def test_batch_gives_the_same_boxes_as_single_runs(detector, singles, bus, zidane):
    batch = detector.detect([bus, zidane, bus, zidane])
    for got, want in zip(batch, [*singles, *singles]):
        order_got, order_want = np.argsort(-got.confidence), np.argsort(-want.confidence)
        assert got.class_id[order_got].tolist() == want.class_id[order_want].tolist()
        np.testing.assert_allclose(got.xyxy[order_got], want.xyxy[order_want], atol=1e-3)
        np.testing.assert_allclose(got.confidence[order_got], want.confidence[order_want], atol=1e-4)


def test_labels_come_from_the_model_metadata(detector, singles):
    assert detector.labels[0] == "person" and detector.labels[5] == "bus" and len(detector.labels) == 80
    assert {d["label"] for d in singles[0].to_dicts()} == {"person", "bus"}


def test_stages_and_describe(detector, bus):
    batch = detector.preprocess([bus])
    assert batch.tensor.shape == (1, 3, 640, 640)
    outputs = detector.infer(batch)
    assert outputs[0].shape == (1, 84, 8400)
    assert len(detector.postprocess(outputs, batch)[0]) == 5
    described = detector.describe()
    assert described["backend"] == "onnxruntime" and described["input_size"] == [640, 640]
    assert described["max_batch"] == 4 and described["output_layout"] == "yolo_channels_first"
    assert described["intra_op_threads"] == usable_cpu_count()


def test_labels_file_overrides_metadata(model_path, bus, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"thing{i}" for i in range(80)))
    det = OnnxRuntimeDetector(ModelConfig(path=str(model_path), labels=str(labels)), intra_op_threads=1)
    assert det.intra_op_threads == 1
    found = det.detect([bus])[0]
    assert found.count("thing0") == 4 and found.count("thing5") == 1


def test_class_filter_keeps_only_the_bus(model_path, bus):
    det = OnnxRuntimeDetector(ModelConfig(path=str(model_path), classes=["bus"]))
    found = det.detect([bus])[0]
    assert [d["label"] for d in found.to_dicts()] == ["bus"]


def test_int8_model_finds_the_bus(int8_model_path, bus):
    det = OnnxRuntimeDetector(ModelConfig(path=str(int8_model_path), max_batch=2))
    assert det.max_batch == 1  # its batch dimension is fixed at 1
    found = det.detect([bus])[0]
    assert found.count("bus", min_confidence=0.5) == 1 and found.count("person") >= 3


def test_thresholds_and_classes_can_change_on_a_loaded_detector(detector, bus):
    try:
        detector.retune(conf_threshold=0.5)
        assert len(detector.detect([bus])[0]) == 4  # the faint, cut-off person drops out
        detector.retune(classes=["bus"])
        assert detector.detect([bus])[0].class_id.tolist() == [5]
        with pytest.raises(DetectorError, match="did you mean 'bus'"):
            detector.retune(classes=["buss"])
        assert detector.classes == ("bus",)  # a rejected change leaves the filter as it was
    finally:
        detector.retune(conf_threshold=0.25, classes=[])
    assert len(detector.detect([bus])[0]) == 5
