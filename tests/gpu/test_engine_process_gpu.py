"""model.engine_process on a real GPU, through real CUDA IPC. The engine is NOT TensorRT.

TensorRT is not installed where these run, so the engine is the benchmark's PyTorch FP16
stand-in (``bench.gpu.torch_engine``), which is the product's ``TensorRTDetector`` with its engine
loaded by onnx2torch. In an engine process its input slots are the CUDA layer's memory,
exported by the child and written by the appliance's GPU letterbox; the detections must be the
ones the same stand-in gives in-process.
"""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("onnx2torch")
pytest.importorskip("pydantic")


@pytest.fixture(scope="module")
def images():
    import cv2

    from testkit.paths import shared_dir

    found = [cv2.imread(str(shared_dir() / "images" / name)) for name in ("bus.jpg", "zidane.jpg")]
    if any(image is None for image in found) or not torch.cuda.is_available():
        pytest.skip("needs the shared sample images and a CUDA GPU")
    return found


@pytest.fixture(scope="module")
def pair(images):
    from bench.common.detectors import model_config
    from testkit.paths import shared_dir
    from bench.gpu.torch_engine import TorchFp16StandIn

    model = model_config(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx", 4)
    local = TorchFp16StandIn(model)
    remote = TorchFp16StandIn(model, engine_process=True)
    yield remote, local
    remote.close()
    local.close()


def test_the_engine_process_gives_the_in_process_detections(pair, images):
    remote, local = pair
    pid = remote.describe()["engine_process"]
    assert pid and pid != os.getpid() and remote.engine_process_problem is None
    frames = [images[0], images[1], images[0], images[1]]
    for _ in range(3):  # more batches than input slots: slots are reused
        mine, theirs = remote.detect(frames), local.detect(frames)
    assert mine[0].count("bus") == 1
    for a, b in zip(mine, theirs):
        assert a.class_id.tolist() == b.class_id.tolist()
        np.testing.assert_allclose(a.xyxy, b.xyxy, atol=1e-2)
        np.testing.assert_allclose(a.confidence, b.confidence, atol=1e-4)


def test_a_killed_engine_process_fails_batches_with_a_clear_error(images):
    from bench.common.detectors import model_config
    from testkit.paths import shared_dir
    from bench.gpu.torch_engine import TorchFp16StandIn
    from edge_app.detect.base import DetectorError

    detector = TorchFp16StandIn(model_config(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx", 1), engine_process=True)
    try:
        os.kill(detector.describe()["engine_process"], signal.SIGKILL)
        with pytest.raises(DetectorError, match="engine process exited"):
            detector.detect([images[0]])
    finally:
        detector.close()


def test_the_appliance_replaces_a_killed_engine_process(images, tmp_path):
    """Through real CUDA IPC: the killed child's input slots stay mapped in the appliance until
    the broken model is retired, and a new child serves the camera's frames."""
    from testkit.paths import shared_dir
    from bench.gpu.torch_engine import TorchFp16StandIn
    from edge_app.appliance.appliance import Appliance
    from edge_app.config.file import parse_config
    from testkit.waiting import wait_for

    made = []

    def factory(model, **options):
        made.append(TorchFp16StandIn(model, **options))
        return made[-1]

    config = parse_config({
        "device_id": "gpu",
        "cameras": [{"id": "cam", "source": "test://box?fps=30&width=1280&height=720"}],
        "model": {"path": str(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"),
                  "engine_dir": str(tmp_path), "max_batch": 1, "engine_process": True},
        "mqtt": {"enabled": False}, "api": {"enabled": False},
    })
    appliance = Appliance(config, detector_factory=factory)
    appliance.start()
    try:
        analysed = lambda: appliance.reads.cameras()[0].frames_analyzed  # noqa: E731
        wait_for(lambda: analysed() >= 10, 90, "frames through the first engine process")
        old_pid = made[0].describe()["engine_process"]
        os.kill(old_pid, signal.SIGKILL)
        wait_for(lambda: len(made) == 2, 90, "the model to be loaded again")  # made[0] said why: its failure
        assert made[1].failure is None
        since = analysed()
        wait_for(lambda: analysed() >= since + 10, 90, "frames through the new engine process")
        assert made[1].describe()["engine_process"] not in (None, old_pid)
    finally:
        appliance.stop()
