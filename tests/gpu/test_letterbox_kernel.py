"""The GPU letterbox kernel against the CPU letterbox, on 1080p and 4K frames, and its speed."""
from __future__ import annotations

import numpy as np
import pytest

from edge_app.detect.letterbox_gpu import GpuLetterbox
from edge_app.detect.letterbox import letterbox

pytestmark = pytest.mark.gpu

TOLERANCE = 1.0 / 255.0 + 1e-6
FRAME_SIZES = {"1080p": (1080, 1920), "4K": (2160, 3840), "odd 1081x1917": (1081, 1917), "bus 810x1080": (1080, 810),
               "small 53x37": (37, 53), "portrait 300x200": (300, 200), "exact 640x640": (640, 640)}


def _frame(name, shape, sample_frame):
    import cv2

    if sample_frame is not None and name in ("1080p", "4K", "bus 810x1080"):
        return cv2.resize(sample_frame, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
    return np.random.default_rng(shape[0] * shape[1]).integers(0, 256, (*shape, 3), dtype=np.uint8)


def _run(device, frames, input_hw=(640, 640), dtype=np.float32):
    gpu = GpuLetterbox(device, input_hw, len(frames), np.dtype(dtype))
    out = device.alloc_device(gpu.image_nbytes * len(frames))
    metas = gpu(frames, out.ptr)
    host = device.alloc_pinned((len(frames), 3, *input_hw), dtype)
    device.memcpy_dtoh_async(host, out.ptr, gpu.stream)
    gpu.stream.synchronize()
    return host, metas


@pytest.mark.parametrize("name", list(FRAME_SIZES))
def test_kernel_matches_cpu_letterbox(device, name, sample_frame, gpu_results):
    frame = _frame(name, FRAME_SIZES[name], sample_frame)
    gpu, metas = _run(device, [frame])
    cpu, meta = letterbox(frame, (640, 640))
    assert metas[0] == meta
    diff = np.abs(gpu[0] - cpu[0])
    gpu_results.setdefault(device.adapter_name, {}).setdefault("kernel_vs_cpu", {})[name] = {
        "max_abs_diff_levels": round(float(diff.max()) * 255, 4), "values_differing": float((diff > 1e-7).mean())}
    assert diff.max() <= TOLERANCE


def test_batch_of_different_frames_lands_in_its_slots(device, sample_frame):
    frames = [_frame(n, FRAME_SIZES[n], sample_frame) for n in ("1080p", "bus 810x1080", "small 53x37")]
    gpu, _ = _run(device, frames)
    for index, frame in enumerate(frames):
        assert np.abs(gpu[index] - letterbox(frame, (640, 640))[0][0]).max() <= TOLERANCE


def test_non_square_model_input(device, sample_frame):
    frame = _frame("1080p", FRAME_SIZES["1080p"], sample_frame)
    gpu, _ = _run(device, [frame], input_hw=(384, 640))
    assert np.abs(gpu[0] - letterbox(frame, (384, 640))[0][0]).max() <= TOLERANCE


def test_fp16_engine_input(device, sample_frame):
    frame = _frame("4K", FRAME_SIZES["4K"], sample_frame)
    gpu, _ = _run(device, [frame], dtype=np.float16)
    cpu = letterbox(frame, (640, 640))[0][0]
    # one level plus half an FP16 step at 1.0
    assert np.abs(gpu[0].astype(np.float32) - cpu).max() <= TOLERANCE + 2.5e-4


def test_greyscale_and_bgra_frames(device):
    grey = np.random.default_rng(3).integers(0, 256, (720, 1280), dtype=np.uint8)
    bgra = np.random.default_rng(4).integers(0, 256, (720, 1280, 4), dtype=np.uint8)
    gpu, _ = _run(device, [grey, bgra])
    assert np.abs(gpu[0] - letterbox(grey, (640, 640))[0][0]).max() <= TOLERANCE
    assert np.abs(gpu[1] - letterbox(bgra, (640, 640))[0][0]).max() <= TOLERANCE


@pytest.mark.parametrize("name", ["1080p", "4K"])
def test_timing_against_opencv_on_the_cpu(device, name, sample_frame, gpu_results, capsys):
    from bench.gpu.preprocess import measure

    frame = _frame(name, FRAME_SIZES[name], sample_frame)
    timings = {k: round(v, 3) for k, v in measure(device, frame, iterations=100).items()}
    gpu_results.setdefault(device.adapter_name, {}).setdefault("timing_ms", {})[name] = timings
    with capsys.disabled():
        print(f"\n[{device.adapter_name} on {device.name}] {name} letterbox ms/frame: {timings}")
    assert timings["gpu_kernel"] > 0 and timings["cpu_letterbox"] > 0


def test_kernel_matches_cpu_on_random_sizes(device, gpu_results):
    """Thirty frame sizes from tiny upscales to beyond 4K, random content, two model input sizes."""
    rng = np.random.default_rng(2024)
    worst = 0.0
    for _ in range(30):
        height, width = int(rng.integers(8, 2400)), int(rng.integers(8, 4200))
        frame = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        input_hw = (640, 640) if rng.random() < 0.5 else (480, 800)
        gpu, _ = _run(device, [frame], input_hw=input_hw)
        worst = max(worst, float(np.abs(gpu[0] - letterbox(frame, input_hw)[0][0]).max()))
    gpu_results.setdefault(device.adapter_name, {})["random_sizes_max_diff_levels"] = round(worst * 255, 4)
    assert worst <= TOLERANCE
