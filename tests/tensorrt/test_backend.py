"""The whole TensorRT backend on the real YOLOv8n model, run by the stand-in (NOT TensorRT).

The stand-in executes the ONNX model with ONNX Runtime behind the engine API, so these tests
check the backend's own work - engine handling, buffers, shapes, batching, slot rotation and
decoding - on real outputs: the persons and the bus in bus.jpg must be found.
"""
from __future__ import annotations

import numpy as np
import pytest

from edge_app.detect.base import Detector, DetectorError
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector
from edge_app.detect.tensorrt import TensorRTDetector
from tests.tensorrt import onnx_models
from tests.tensorrt.same_detections import assert_same_detections
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice


def _assert_bus(detections):
    assert detections.count("person") == 4
    assert detections.count("bus") == 1
    assert detections.count("person", min_confidence=0.8) == 3
    assert detections.count("bus", min_confidence=0.8) == 1




@pytest.fixture
def detector(standin_trt, host_device, make_model):
    det = TensorRTDetector(make_model(max_batch=4), device=host_device)
    yield det
    det.close()


def test_finds_the_persons_and_the_bus(detector, bus_image):
    assert detector.backend_name == "tensorrt" and detector.input_hw == (640, 640) and detector.max_batch == 4
    result = detector.detect([bus_image])[0]
    _assert_bus(result)
    assert result.labels[0] == "person"  # labels from the ONNX metadata, kept in the sidecar


def test_batches_give_the_same_answers_as_single_frames(detector, bus_image, zidane_image):
    single_bus = detector.detect([bus_image])[0]
    single_zidane = detector.detect([zidane_image])[0]
    batch = detector.detect([bus_image, zidane_image, bus_image])
    assert_same_detections(batch[0], single_bus, confidence_atol=1e-5)
    assert_same_detections(batch[1], single_zidane, confidence_atol=1e-5)
    assert_same_detections(batch[2], single_bus, confidence_atol=1e-5)
    # more frames than max_batch are split by Detector.detect
    many = detector.detect([zidane_image] * 5 + [bus_image])
    assert len(many) == 6
    _assert_bus(many[5])


def test_matches_onnx_runtime(detector, make_model, bus_image, zidane_image):
    ort = OnnxRuntimeDetector(make_model(max_batch=2), providers=["CPUExecutionProvider"])
    for mine, theirs in zip(detector.detect([bus_image, zidane_image]), ort.detect([bus_image, zidane_image])):
        assert_same_detections(mine, theirs, confidence_atol=1e-5)


def test_no_allocation_per_frame_and_execution_on_its_stream(detector, host_device, bus_image):
    detector.detect([bus_image, bus_image])
    allocations, copies = host_device.allocations, host_device.copies
    for _ in range(3):
        detector.detect([bus_image])
        detector.detect([bus_image] * 4)
    assert host_device.allocations == allocations
    assert host_device.copies > copies
    runtime = detector._runtime
    assert set(runtime._context.execute_calls) == {runtime.stream.handle}


def test_three_stage_pipeline_keeps_batches_apart(detector, bus_image, zidane_image):
    """Preprocess k+1 and k+2 while k is not yet decoded, as the pipeline's three threads do."""
    prepared = [detector.preprocess([image]) for image in (bus_image, zidane_image, bus_image)]
    outputs = [detector.infer(p) for p in prepared]
    results = [detector.postprocess(o, p)[0] for o, p in zip(outputs, prepared)]
    _assert_bus(results[0])
    assert results[1].count("person") == 2 and results[1].count("tie") == 1
    _assert_bus(results[2])


def test_gpu_preprocessing_path_with_the_emulated_kernel(standin_trt, make_model, bus_image, zidane_image):
    """The backend's GPU path (images left in a device input slot) with the kernel emulated in numpy."""
    device = HostMemoryCudaDevice(emulate_kernels=True)
    det = TensorRTDetector(make_model(max_batch=2), device=device)
    cpu = TensorRTDetector(make_model(max_batch=2), device=HostMemoryCudaDevice(), gpu_preprocess=False)
    assert det.preprocessing == "gpu" and cpu.preprocessing == "cpu"
    batch = det.preprocess([bus_image, zidane_image])
    assert batch.tensor is None and batch.device_slot is not None and batch.size == 2
    results = det.postprocess(det.infer(batch), batch)
    _assert_bus(results[0])
    for mine, theirs in zip(results, cpu.detect([bus_image, zidane_image])):
        assert_same_detections(mine, theirs, confidence_atol=1e-5)
    assert device.launches == 2 + 2  # a letterbox per image, then the two decoding kernels
    det.close()
    cpu.close()


def test_nv12_frames_from_a_hardware_decoder_take_the_gpu_path(standin_trt, make_model, bus_image, zidane_image):
    """A device NV12 frame goes to the NV12 kernel where it lies (no copy at all) and a host NV12
    frame is uploaded once; detections match the CPU detector on the same pictures."""
    from edge_app.detect.nv12_reference import bgr_to_nv12
    from edge_app.capture.gpu_image import DeviceNv12Image, HostNv12Image, Nv12Planes, nv12_to_bgr

    device = HostMemoryCudaDevice(emulate_kernels=True)
    det = TensorRTDetector(make_model(max_batch=2), device=device)
    cpu = TensorRTDetector(make_model(max_batch=2), device=HostMemoryCudaDevice(), gpu_preprocess=False)
    bus_nv12, zidane_nv12 = bgr_to_nv12(bus_image), bgr_to_nv12(zidane_image)
    height, width = bus_image.shape[:2]
    buffer = device.alloc_device(bus_nv12.nbytes)
    device.memcpy_htod_async(buffer.ptr, bus_nv12, device.create_stream())
    on_device = DeviceNv12Image(Nv12Planes(buffer.ptr, buffer.ptr + width * height, width, width, width, height),
                                lambda planes, host: pytest.fail("the GPU path must not download the frame"))
    on_host = HostNv12Image(zidane_nv12)
    copies = device.copies
    batch = det.preprocess([on_device])
    assert device.copies == copies and device.launches == 1 and batch.device_slot is not None
    results = det.postprocess(det.infer(batch), batch)
    _assert_bus(results[0])
    assert_same_detections(results[0], cpu.detect([nv12_to_bgr(bus_nv12)])[0], confidence_atol=1e-5)
    copies = device.copies
    batch = det.preprocess([on_host, on_device])
    assert device.copies == copies + 1 and on_host.conversions == 0
    results = det.postprocess(det.infer(batch), batch)
    for mine, theirs in zip(results, cpu.detect([nv12_to_bgr(zidane_nv12), nv12_to_bgr(bus_nv12)])):
        assert_same_detections(mine, theirs, confidence_atol=1e-5)
    det.close()
    cpu.close()


def test_a_device_frame_slot_packs_its_letterbox_launch_once(standin_trt, make_model, bus_image):
    """An NVDEC camera's frames come from a few slots: the NV12 letterbox packs a slot's kernel
    arguments once per place in the batch and reuses them, and new pixels in the slot still give
    that frame's detections."""
    from edge_app.detect.nv12_reference import bgr_to_nv12
    from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes, nv12_to_bgr

    device = HostMemoryCudaDevice(emulate_kernels=True)
    packed = []
    pack_args = device.pack_args
    device.pack_args = lambda args: packed.append(args) or pack_args(args)
    det = TensorRTDetector(make_model(max_batch=2), device=device)
    cpu = TensorRTDetector(make_model(max_batch=2), device=HostMemoryCudaDevice(), gpu_preprocess=False)
    pictures = [bgr_to_nv12(bus_image), bgr_to_nv12(np.ascontiguousarray(bus_image[:, ::-1]))]
    height, width = bus_image.shape[:2]
    stream = device.create_stream()
    buffer = device.alloc_device(pictures[0].nbytes)
    slot = DeviceNv12Image(Nv12Planes(buffer.ptr, buffer.ptr + width * height, width, width, width, height),
                           lambda planes, host: pytest.fail("the GPU path must not download the frame"))
    rounds = det.max_batches_in_flight + 1  # the detector's input buffers take turns
    packings = []
    for _ in range(2):
        for _ in range(rounds):
            for nv12 in pictures:  # a slot's next frames: the same place, new pixels
                device.memcpy_htod_async(buffer.ptr, nv12, stream)
                batch = det.preprocess([slot])
                result = det.postprocess(det.infer(batch), batch)[0]
                assert_same_detections(result, cpu.detect([nv12_to_bgr(nv12)])[0], confidence_atol=1e-5)
        packings.append(len(packed))
    assert 1 <= packings[0] <= det.max_batches_in_flight  # one per input buffer at most
    assert packings[1] == packings[0]  # and none after
    batch = det.preprocess([slot, slot])  # the slot at place 1 as well: that one is new
    det.postprocess(det.infer(batch), batch)
    assert len(packed) == packings[0] + 1
    det.close()
    cpu.close()


def test_gpu_preprocessing_requested_without_nvrtc_is_an_error(standin_trt, host_device, make_model):
    with pytest.raises(DetectorError, match="GPU preprocessing was requested"):
        TensorRTDetector(make_model(), device=host_device, gpu_preprocess=True)


def test_efficient_nms_engines_are_decoded(standin_trt, host_device, make_model, model_path, tmp_path, bus_image):
    nms_model = onnx_models.with_efficient_nms(model_path, tmp_path / "yolov8n_nms.onnx")
    det = TensorRTDetector(make_model(path=str(nms_model), max_batch=2), device=host_device)
    assert det.describe()["output_layout"] == "efficient_nms"
    assert [s.dtype for s in det._runtime.outputs] == [np.int32, np.float32, np.float32, np.int32]
    results = det.detect([bus_image, bus_image])
    for result in results:
        _assert_bus(result)
    det.close()


def test_fixed_batch_models_pad_the_batch(standin_trt, host_device, make_model, model_path, tmp_path, bus_image):
    fixed = onnx_models.with_static_batch(model_path, tmp_path / "yolov8n_b2.onnx", 2)
    det = TensorRTDetector(make_model(path=str(fixed), max_batch=4), device=host_device)
    assert det.max_batch == 2 and not det._runtime.dynamic_batch
    _assert_bus(det.detect([bus_image])[0])
    det.close()


def test_user_engine_is_used_as_it_is(standin_trt, host_device, make_model, tmp_path, bus_image):
    built = TensorRTDetector(make_model(), device=host_device)
    user_engine = tmp_path / "mine.engine"
    user_engine.write_bytes(built.engine.path.read_bytes())
    built.close()
    det = TensorRTDetector(make_model(path=str(user_engine)), device=HostMemoryCudaDevice())
    assert det.engine.source == "user" and det.describe()["precision"] == "as built"
    _assert_bus(det.detect([bus_image])[0])
    det.close()


def test_user_engine_that_does_not_deserialise_is_a_clear_error(standin_trt, host_device, make_model, tmp_path):
    bad = tmp_path / "broken.plan"
    bad.write_bytes(b"\x00" * 4096)
    with pytest.raises(DetectorError) as err:
        TensorRTDetector(make_model(path=str(bad)), device=host_device)
    message = str(err.value)
    assert "broken.plan could not be deserialised by TensorRT 10.3.0" in message
    assert "only loads with the TensorRT version and GPU it was built for" in message
    assert not (tmp_path / "engines").exists()  # a user's engine is never rebuilt or replaced


def test_engine_from_another_tensorrt_version_is_refused_clearly(standin_trt, host_device, make_model, tmp_path, monkeypatch):
    built = TensorRTDetector(make_model(), device=host_device)
    user_engine = tmp_path / "old.engine"
    user_engine.write_bytes(built.engine.path.read_bytes())
    built.close()
    monkeypatch.setattr(standin_trt, "__version__", "10.7.0")
    with pytest.raises(DetectorError, match="could not be deserialised by TensorRT 10.7.0"):
        TensorRTDetector(make_model(path=str(user_engine)), device=host_device)


def test_configured_input_size_must_fit_the_engine(standin_trt, host_device, make_model):
    with pytest.raises(DetectorError, match="input_size"):
        TensorRTDetector(make_model(input_size=320), device=host_device)


def test_describe_reports_engine_and_preprocessing(detector):
    info = detector.describe()
    assert info["backend"] == "tensorrt" and info["precision"] == "fp16"
    assert info["engine_source"] == "built" and info["engine"].endswith(".engine")
    assert info["preprocessing"] == "cpu" and info["cuda"]["adapter"] == "host-memory stand-in"


def test_unavailable_without_tensorrt(no_tensorrt, make_model):
    assert TensorRTDetector.is_available() is False
    with pytest.raises(DetectorError, match="TensorRT is not installed"):
        TensorRTDetector(make_model())


def test_factory_picks_tensorrt_when_available(standin_trt, make_model, monkeypatch, bus_image):
    import edge_app.cuda
    from edge_app.detect import factory
    from edge_app.detect.tensorrt import backend

    monkeypatch.setattr(edge_app.cuda, "available_adapters", lambda: ["host-memory stand-in"])
    monkeypatch.setattr(backend, "open_device", lambda: HostMemoryCudaDevice())
    assert factory.available_backends()["tensorrt"] is True
    det = factory.create_detector(make_model(backend="auto"))
    assert isinstance(det, TensorRTDetector) and isinstance(det, Detector)
    _assert_bus(det.detect([bus_image])[0])
    det.close()
