"""GPU decoding (score filter + NMS kernels) against the host decoder, on the real model's outputs.

The raw outputs are the real YOLOv8n's on the sample images, computed by ONNX Runtime on the
CPU and uploaded; both decoders then read the same numbers, so any difference is the decoders'.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from edge_app.detect.base import LetterboxMeta
from edge_app.detect.yolo_outputs import YoloDecoder
from edge_app.detect.yolo_outputs_gpu import GpuYoloDecoder, detections_from

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("EDGE_APP_SHARED", REPO.parent / "shared"))
ROTATION = 3


@pytest.fixture(scope="module")
def model_outputs():
    """(raw float32 outputs N x 84 x 8400, metas) for bus.jpg, zidane.jpg and a noise frame."""
    ort = pytest.importorskip("onnxruntime")
    import cv2

    from edge_app.detect.letterbox import letterbox

    model = SHARED / "models" / "yolov8n_coco_dynbatch.onnx"
    if not model.exists():
        pytest.skip(f"{model} is missing")
    frames = [cv2.imread(str(SHARED / "images" / name)) for name in ("bus.jpg", "zidane.jpg")]
    frames.append(np.random.default_rng(3).integers(0, 256, (720, 1280, 3), dtype=np.uint8))
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    tensors, metas = zip(*(letterbox(frame, (640, 640)) for frame in frames))
    raw = session.run(None, {session.get_inputs()[0].name: np.concatenate(tensors)})[0]
    return np.ascontiguousarray(raw, dtype=np.float32), list(metas)


def _decode_both(device, raw, metas, dtype=np.float32, max_det=300, **tuning):
    host_decoder = YoloDecoder([f"c{i}" for i in range(80)], max_det=max_det, **tuning)
    raw = np.ascontiguousarray(raw.astype(dtype))
    gpu = GpuYoloDecoder(device, raw.shape[0], raw.shape[1:], raw.dtype, 80, max_det, ROTATION)
    buffer = device.alloc_device(raw.nbytes)
    stream = device.create_stream()
    device.memcpy_htod_async(buffer.ptr, raw, stream)
    stream.synchronize()
    decoded = gpu.run(buffer.ptr, raw.shape[0], host_decoder.tuning)
    return host_decoder.decode([raw], metas), detections_from(decoded, metas, host_decoder), decoded, gpu


def _assert_same(host, gpu):
    assert len(host) == len(gpu)
    for expected, got in zip(host, gpu):
        assert got.class_id.tolist() == expected.class_id.tolist()
        np.testing.assert_allclose(got.confidence, expected.confidence, rtol=0, atol=1e-6)
        np.testing.assert_allclose(got.xyxy, expected.xyxy, rtol=0, atol=1e-3)


CASES = {
    "defaults": {},
    "low threshold": {"conf_threshold": 0.05},
    "high threshold": {"conf_threshold": 0.6},
    "tight iou": {"iou_threshold": 0.2},
    "loose iou": {"iou_threshold": 0.9},
    "classes person and bus": {"classes": ["c0", "c5"]},
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_detections_as_the_host_decoder(device, model_outputs, case):
    raw, metas = model_outputs
    host, gpu, decoded, _ = _decode_both(device, raw, metas, **CASES[case])
    assert (decoded.kept >= 0).all() and decoded.raw is None
    _assert_same(host, gpu)
    if case == "defaults":
        assert len(host[0]) >= 4 and len(host[1]) >= 2  # bus.jpg and zidane.jpg have people in them


def test_float16_outputs(device, model_outputs):
    raw, metas = model_outputs
    host, gpu, _, _ = _decode_both(device, raw, metas, dtype=np.float16)
    _assert_same(host, gpu)


def test_max_det_keeps_the_best(device, model_outputs):
    raw, metas = model_outputs
    host, gpu, _, _ = _decode_both(device, raw, metas, max_det=2, conf_threshold=0.05)
    assert [len(d) for d in gpu][:2] == [2, 2]
    _assert_same(host, gpu)


def test_more_survivors_than_the_kernel_takes_are_decoded_on_the_host(device, model_outputs):
    """A threshold of 0.0001 lets thousands of anchors through: the image overflows the cap, and
    its detections come from the raw output, identical to the host decoder's."""
    raw, metas = model_outputs
    host, gpu, decoded, decoder = _decode_both(device, raw, metas, conf_threshold=0.0001)
    assert (decoded.kept < 0).any() and decoded.raw is not None
    assert decoder.overflowed_batches == 1
    _assert_same(host, gpu)


def test_dense_overlapping_boxes_of_three_classes(device):
    """Synthetic: 600 boxes jittered around 20 centres, three classes, distinct scores, so the
    greedy order matters everywhere."""
    rng = np.random.default_rng(11)
    anchors, classes = 8400, 80
    raw = np.zeros((2, 4 + classes, anchors), np.float32)
    for image in range(2):
        chosen = rng.choice(anchors, 600, replace=False)
        centres = rng.uniform(50, 590, (20, 2))
        which = rng.integers(0, 20, 600)
        raw[image, 0:2, chosen] = centres[which] + rng.normal(0, 6, (600, 2))  # indexed (600, 2)
        raw[image, 2:4, chosen] = rng.uniform(30, 90, (600, 2))
        raw[image, 4 + rng.integers(0, 3, 600), chosen] = rng.permutation(np.linspace(0.3, 0.99, 600))
    metas = [LetterboxMeta((640, 640), 1.0, (0, 0))] * 2
    host, gpu, decoded, _ = _decode_both(device, raw, metas)
    assert min(len(d) for d in host) > 20
    _assert_same(host, gpu)


def test_results_rotate_so_a_batch_in_decode_keeps_its_own(device, model_outputs):
    """The pipeline decodes batch k while batch k+1 runs: results live in ``ROTATION`` sets."""
    raw, metas = model_outputs
    decoder = YoloDecoder([f"c{i}" for i in range(80)])
    gpu = GpuYoloDecoder(device, 3, raw.shape[1:], raw.dtype, 80, 300, ROTATION)
    buffer = device.alloc_device(raw.nbytes)
    stream = device.create_stream()
    device.memcpy_htod_async(buffer.ptr, raw, stream)
    stream.synchronize()
    first = gpu.run(buffer.ptr, 1, decoder.tuning)
    kept_first = first.kept.copy()
    for _ in range(ROTATION - 1):
        gpu.run(buffer.ptr + raw[0].nbytes, 1, decoder.tuning)  # zidane.jpg
    assert first.kept.tolist() == kept_first.tolist()
