"""The TensorRT backend's GPU decoding path, run on the CPU. NOT TensorRT and NOT CUDA.

The model runs on the TensorRT stand-in (ONNX Runtime behind the engine API) and the "device"
is ``HostMemoryCudaDevice`` with ``emulate_kernels=True``: the two decoding kernels are replaced
by a numpy emulation of their documented contract (``kernel_emulation``). These tests check the
backend's wiring - which outputs stay on the device, result rotation, live retuning, the
fall-back to host decoding - on the real model; ``tests/gpu/test_yolo_outputs_gpu.py`` checks the
kernels themselves on a GPU.
"""
from __future__ import annotations

import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.yolo_outputs_gpu import GpuDecoded
from edge_app.detect.tensorrt import TensorRTDetector
from tests.tensorrt.same_detections import assert_retuned_alike, assert_same_detections
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice




@pytest.fixture
def pair(standin_trt, make_model):
    """(GPU-decoding detector, host-decoding detector) on the same model."""
    gpu = TensorRTDetector(make_model(max_batch=3), device=HostMemoryCudaDevice(emulate_kernels=True))
    host = TensorRTDetector(make_model(max_batch=3), device=HostMemoryCudaDevice(emulate_kernels=True), gpu_decode=False)
    yield gpu, host
    gpu.close()
    host.close()


def test_gpu_decoding_gives_the_host_decoders_detections(pair, bus_image, zidane_image):
    gpu, host = pair
    assert gpu.postprocessing == "gpu" and host.postprocessing == "cpu"
    assert gpu.describe()["postprocessing"] == "gpu"
    batch = gpu.preprocess([bus_image, zidane_image, bus_image])
    outputs = gpu.infer(batch)
    assert isinstance(outputs, GpuDecoded) and outputs.raw is None
    results = gpu.postprocess(outputs, batch)
    assert results[0].count("person") == 4 and results[0].count("bus") == 1
    for mine, theirs in zip(results, host.detect([bus_image, zidane_image, bus_image])):
        assert_same_detections(mine, theirs)


def test_raw_outputs_are_not_copied_to_the_host(pair, bus_image):
    """Only the kept boxes come back: the runtime's host output buffers are never written."""
    gpu, _ = pair
    host_outputs = gpu._runtime.outputs[0].host
    for buffer in host_outputs:
        buffer[...] = -7.0
    gpu.detect([bus_image] * 3)
    assert all((buffer == -7.0).all() for buffer in host_outputs)


def test_three_batches_in_flight_keep_their_own_results(pair, bus_image, zidane_image):
    gpu, host = pair
    images = [bus_image, zidane_image, bus_image]
    prepared = [gpu.preprocess([image]) for image in images]
    outputs = [gpu.infer(p) for p in prepared]
    for image, output, batch in zip(images, outputs, prepared):
        assert_same_detections(gpu.postprocess(output, batch)[0], host.detect([image])[0])


@pytest.mark.parametrize("tuning", [
    {"classes": ["bus"]},
    {"classes": ["person", "tie"]},
    {"conf_threshold": 0.7},
    {"conf_threshold": 0.05, "iou_threshold": 0.3},
])
def test_retuning_reaches_the_kernels_from_the_next_batch(pair, bus_image, zidane_image, tuning):
    gpu, host = pair
    assert_retuned_alike(gpu, host, bus_image, [bus_image, zidane_image], tuning)
    if "classes" in tuning:
        gpu.retune(classes=[])
        host.retune(classes=[])
        assert_same_detections(gpu.detect([bus_image])[0], host.detect([bus_image])[0])


def test_an_image_with_too_many_candidates_is_decoded_on_the_host(pair, bus_image, zidane_image):
    """At a threshold of 0.0005 zidane.jpg has more candidates than the kernels take and bus.jpg
    fewer: the one image is decoded from its raw output on the host, the other on the "GPU"."""
    gpu, host = pair
    gpu.retune(conf_threshold=0.0005)
    host.retune(conf_threshold=0.0005)
    batch = gpu.preprocess([bus_image, zidane_image])
    outputs = gpu.infer(batch)
    assert outputs.kept[0] >= 0 and outputs.kept[1] == -1 and outputs.raw is not None
    for mine, theirs in zip(gpu.postprocess(outputs, batch), host.detect([bus_image, zidane_image])):
        assert_same_detections(mine, theirs)


def test_gpu_decoding_requested_without_nvrtc_is_an_error(standin_trt, make_model):
    with pytest.raises(DetectorError, match="GPU decoding was requested"):
        TensorRTDetector(make_model(), device=HostMemoryCudaDevice(), gpu_decode=True)


def test_without_nvrtc_decoding_stays_on_the_host(standin_trt, make_model, bus_image):
    det = TensorRTDetector(make_model(), device=HostMemoryCudaDevice())
    try:
        assert det.postprocessing == "cpu"
        assert det.detect([bus_image])[0].count("bus") == 1
    finally:
        det.close()
