"""The NV12 letterbox kernel against the numpy reference (NV12->BGR with OpenCV's coefficients,
then the CPU letterbox): device frames packed and pitched, host frames, f32 and f16, batches."""
from __future__ import annotations

import time

import numpy as np
import pytest

from edge_app.detect.letterbox_gpu import GpuLetterbox
from edge_app.detect.nv12_reference import bgr_to_nv12, letterbox_nv12_reference
from edge_app.detect.letterbox import letterbox
from edge_app.capture.gpu_image import DeviceNv12Image, HostNv12Image, Nv12Planes
from tests.gpu.counting import CountingDevice

pytestmark = pytest.mark.gpu

TOLERANCE = 1.0 / 255.0 + 1e-6
FRAME_SIZES = {"1080p": (1080, 1920), "4K": (2160, 3840), "bus 810x1080": (1080, 810), "small 52x36": (36, 52),
               "unaligned 1916x1084": (1084, 1916), "exact 640x640": (640, 640), "upscale 320x240": (240, 320)}


def _bgr(name, shape, sample_frame):
    import cv2

    if sample_frame is not None and name in ("1080p", "4K", "bus 810x1080", "upscale 320x240"):
        return cv2.resize(sample_frame, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
    return np.random.default_rng(shape[0] * shape[1]).integers(0, 256, (*shape, 3), dtype=np.uint8)


def _device_nv12(device, nv12: np.ndarray, pitch: int = 0) -> DeviceNv12Image:
    """Upload ``nv12`` as a device frame; with ``pitch`` the planes have padded rows and lie apart."""
    height, width = nv12.shape[0] * 2 // 3, nv12.shape[1]
    stream = device.create_stream()
    if not pitch:
        buffer = device.alloc_device(nv12.nbytes)
        device.memcpy_htod_async(buffer.ptr, np.ascontiguousarray(nv12), stream)
        planes = Nv12Planes(buffer.ptr, buffer.ptr + width * height, width, width, width, height)
    else:
        luma = np.full((height, pitch), 7, np.uint8)
        chroma = np.full((height // 2, pitch), 9, np.uint8)
        luma[:, :width], chroma[:, :width] = nv12[:height], nv12[height:]
        y_buf, uv_buf = device.alloc_device(luma.nbytes), device.alloc_device(chroma.nbytes)
        device.memcpy_htod_async(y_buf.ptr, luma, stream)
        device.memcpy_htod_async(uv_buf.ptr, chroma, stream)
        planes = Nv12Planes(y_buf.ptr, uv_buf.ptr, pitch, pitch, width, height)
    stream.synchronize()
    return DeviceNv12Image(planes, lambda p, host: pytest.fail("the letterbox must not download the frame"))


def _run(device, frames, input_hw=(640, 640), dtype=np.float32):
    gpu = GpuLetterbox(device, input_hw, len(frames), np.dtype(dtype))
    out = device.alloc_device(gpu.image_nbytes * len(frames))
    metas = gpu(frames, out.ptr)
    host = device.alloc_pinned((len(frames), 3, *input_hw), dtype)
    device.memcpy_dtoh_async(host, out.ptr, gpu.stream)
    gpu.stream.synchronize()
    return host, metas


@pytest.mark.parametrize("pitch_pad", [0, 256], ids=["packed", "pitched"])
@pytest.mark.parametrize("name", list(FRAME_SIZES))
def test_device_nv12_kernel_matches_reference(device, name, pitch_pad, sample_frame, gpu_results):
    nv12 = bgr_to_nv12(_bgr(name, FRAME_SIZES[name], sample_frame))
    frame = _device_nv12(device, nv12, pitch=nv12.shape[1] + pitch_pad if pitch_pad else 0)
    gpu, metas = _run(device, [frame])
    reference, meta = letterbox_nv12_reference(nv12, (640, 640))
    assert metas[0] == meta
    diff = np.abs(gpu[0] - reference[0])
    gpu_results.setdefault(device.adapter_name, {}).setdefault("nv12_kernel_vs_reference", {})[f"{name} {pitch_pad}"] = {
        "max_abs_diff_levels": round(float(diff.max()) * 255, 4), "values_differing": float((diff > 1e-7).mean())}
    assert diff.max() <= TOLERANCE
    assert frame.downloads == 0


def test_fp16_engine_input_from_nv12(device, sample_frame):
    nv12 = bgr_to_nv12(_bgr("4K", FRAME_SIZES["4K"], sample_frame))
    gpu, _ = _run(device, [_device_nv12(device, nv12)], dtype=np.float16)
    reference = letterbox_nv12_reference(nv12, (640, 640))[0][0]
    assert np.abs(gpu[0].astype(np.float32) - reference).max() <= TOLERANCE + 2.5e-4


def test_host_nv12_frames_are_uploaded_once_each(device, sample_frame):
    counting = CountingDevice(device)
    nv12 = [bgr_to_nv12(_bgr(n, FRAME_SIZES[n], sample_frame)) for n in ("1080p", "bus 810x1080")]
    frames = [HostNv12Image(a) for a in nv12]
    gpu = GpuLetterbox(counting, (640, 640), 2)
    out = device.alloc_device(gpu.image_nbytes * 2)
    gpu(frames, out.ptr)
    assert counting.host_to_device == 2 and counting.device_to_host == 0
    assert all(f.conversions == 0 for f in frames)  # no BGR was made on the host
    host = device.alloc_pinned((2, 3, 640, 640), np.float32)
    device.memcpy_dtoh_async(host, out.ptr, gpu.stream)
    gpu.stream.synchronize()
    for index, array in enumerate(nv12):
        assert np.abs(host[index] - letterbox_nv12_reference(array, (640, 640))[0][0]).max() <= TOLERANCE


def test_mixed_batch_bgr_host_nv12_device_nv12(device, sample_frame):
    bgr = _bgr("1080p", FRAME_SIZES["1080p"], sample_frame)
    host_nv12 = bgr_to_nv12(_bgr("bus 810x1080", FRAME_SIZES["bus 810x1080"], sample_frame))
    device_nv12 = bgr_to_nv12(_bgr("small 52x36", FRAME_SIZES["small 52x36"], sample_frame))
    gpu, _ = _run(device, [bgr, HostNv12Image(host_nv12), _device_nv12(device, device_nv12)], input_hw=(384, 640))
    assert np.abs(gpu[0] - letterbox(bgr, (384, 640))[0][0]).max() <= TOLERANCE
    assert np.abs(gpu[1] - letterbox_nv12_reference(host_nv12, (384, 640))[0][0]).max() <= TOLERANCE
    assert np.abs(gpu[2] - letterbox_nv12_reference(device_nv12, (384, 640))[0][0]).max() <= TOLERANCE


def test_random_sizes_and_content(device, gpu_results):
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(20):
        height, width = 2 * int(rng.integers(4, 1200)), 2 * int(rng.integers(4, 2100))
        nv12 = rng.integers(0, 256, (height * 3 // 2, width), dtype=np.uint8)
        input_hw = (640, 640) if rng.random() < 0.5 else (480, 800)
        gpu, _ = _run(device, [_device_nv12(device, nv12)], input_hw=input_hw)
        worst = max(worst, float(np.abs(gpu[0] - letterbox_nv12_reference(nv12, input_hw)[0][0]).max()))
    gpu_results.setdefault(device.adapter_name, {})["nv12_random_sizes_max_diff_levels"] = round(worst * 255, 4)
    assert worst <= TOLERANCE


def test_timing_nv12_on_device_against_bgr_upload(device, sample_frame, gpu_results, capsys):
    bgr = _bgr("1080p", FRAME_SIZES["1080p"], sample_frame)
    frame = _device_nv12(device, bgr_to_nv12(bgr))
    gpu = GpuLetterbox(device, (640, 640), 1)
    out = device.alloc_device(gpu.image_nbytes)
    timings = {}
    for label, batch in (("nv12_device_ms", [frame]), ("bgr_host_upload_ms", [bgr])):
        for _ in range(10):
            gpu(batch, out.ptr)
        start_s = time.perf_counter()
        for _ in range(200):
            gpu(batch, out.ptr)
        timings[label] = round((time.perf_counter() - start_s) / 200 * 1e3, 4)
    gpu_results.setdefault(device.adapter_name, {})["letterbox_1080p_per_frame"] = timings
    with capsys.disabled():
        print(f"\n[{device.adapter_name} on {device.name}] 1080p letterbox, ms/frame incl. sync: {timings}")
    assert timings["nv12_device_ms"] > 0
