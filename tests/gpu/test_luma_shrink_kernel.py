"""Motion's small grey picture made on the GPU: the kernel against its numpy reference, pitched
planes, and the motion check on a device frame without downloading the frame; the time it takes."""
from __future__ import annotations

import time

import numpy as np
import pytest

from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
from edge_app.capture.luma_shrinker import LumaShrinker
from edge_app.cuda.kernels.luma_shrink import luma_shrink_blur_reference, luma_shrink_reference

pytestmark = pytest.mark.gpu


def _device_frame(device, y: np.ndarray, pitch: int, shrinker):
    height, width = y.shape
    padded = np.full((height * 3 // 2, pitch), 77, np.uint8)
    padded[:height, :width] = y
    buffer = device.alloc_device(padded.nbytes)
    stream = device.create_stream()
    device.memcpy_htod_async(buffer.ptr, padded, stream)
    stream.synchronize()
    planes = Nv12Planes(buffer.ptr, buffer.ptr + pitch * height, pitch, pitch, width, height)
    image = DeviceNv12Image(planes, lambda p, host: pytest.fail("motion must not download the frame"),
                            keepalive=buffer, shrink=shrinker)
    return image


@pytest.mark.parametrize("size,out,pitch", [((1080, 1920), (320, 180), 1920), ((1080, 1920), (320, 180), 2048),
                                            ((720, 1280), (320, 180), 1280), ((36, 52), (40, 28), 64)])
def test_kernel_equals_reference(device, size, out, pitch):
    y = np.random.default_rng(size[0]).integers(0, 256, size, dtype=np.uint8)
    image = _device_frame(device, y, pitch, LumaShrinker(device))
    small = image.small_grey(*out)
    assert small.shape == (out[1], out[0])
    assert np.array_equal(small, luma_shrink_reference(y, *out))


@pytest.mark.parametrize("size,out,pitch", [((1080, 1920), (320, 180), 1920), ((1080, 1920), (320, 180), 2048),
                                            ((720, 1280), (320, 180), 1280), ((36, 52), (40, 28), 64),
                                            ((6, 8), (3, 2), 8), ((4, 4), (1, 1), 4), ((100, 66), (33, 50), 128)])
def test_the_blurring_kernel_equals_the_host_blur_of_the_reference(device, size, out, pitch):
    """Bit for bit: the taps are dyadic (1 4 6 4 1 / 16), so every sum is exact in float32, and
    the border (reflect 101) must be OpenCV's, also for pictures smaller than a block or the blur."""
    import cv2

    y = np.random.default_rng(size[1]).integers(0, 256, size, dtype=np.uint8)
    image = _device_frame(device, y, pitch, LumaShrinker(device))
    taps = cv2.getGaussianKernel(5, 0, cv2.CV_32F)
    picture = image.small_blurred(*out, taps)
    assert picture.dtype == np.float32 and picture.shape == (out[1], out[0])
    expected = luma_shrink_blur_reference(y, *out, taps)
    assert np.array_equal(picture, expected), np.abs(picture - expected).max()


def test_motion_check_of_a_device_frame_costs_little(device, gpu_results):
    import cv2

    from edge_app.motion.detector import MotionDetector, small_grey

    cv2.setNumThreads(1)  # as in the appliance (edge_app.appliance.appliance): CPU is the appliance's
    y = np.random.default_rng(3).integers(0, 256, (1080, 1920), dtype=np.uint8)
    shrinker = LumaShrinker(device)
    image = _device_frame(device, y, 1920, shrinker)
    detector = MotionDetector()
    for index in range(20):  # warm-up: the kernel's compile, the first buffers
        detector.detect(small_grey(image), index / 30)
    rounds = 300
    start, cpu_start = time.perf_counter(), time.process_time()
    for index in range(rounds):
        small_grey(image)
    shrink_ms = (time.perf_counter() - start) * 1000 / rounds
    shrink_cpu_ms = (time.process_time() - cpu_start) * 1000 / rounds
    start, cpu_start = time.perf_counter(), time.process_time()
    for index in range(rounds):
        detector.detect(small_grey(image), 1 + index / 30)
    total_ms = (time.perf_counter() - start) * 1000 / rounds
    total_cpu_ms = (time.process_time() - cpu_start) * 1000 / rounds
    # the appliance's path: the blur on the GPU too (MotionDetector.picture)
    blurred_detector = MotionDetector()
    for index in range(20):
        blurred_detector.detect(blurred_detector.picture(image), index / 30)
    start, cpu_start = time.perf_counter(), time.process_time()
    for index in range(rounds):
        blurred_detector.detect(blurred_detector.picture(image), 1 + index / 30)
    blurred_ms = (time.perf_counter() - start) * 1000 / rounds
    blurred_cpu_ms = (time.process_time() - cpu_start) * 1000 / rounds
    assert image.downloads == 0
    gpu_results["motion_gpu_1080p"] = {"shrink_ms": round(shrink_ms, 4), "shrink_cpu_ms": round(shrink_cpu_ms, 4),
                                       "check_ms": round(total_ms, 4), "check_cpu_ms": round(total_cpu_ms, 4),
                                       "check_blurred_on_gpu_ms": round(blurred_ms, 4),
                                       "check_blurred_on_gpu_cpu_ms": round(blurred_cpu_ms, 4)}
