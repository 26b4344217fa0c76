"""The NV12 letterbox reference (what the GPU kernel is tested against) against OpenCV's own path."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from edge_app.detect.letterbox import Letterboxer, letterbox
from edge_app.detect.nv12_reference import bgr_to_nv12, letterbox_nv12_reference
from edge_app.capture.gpu_image import HostNv12Image
from testkit.paths import shared_dir


def _frame(height: int, width: int, seed: int) -> np.ndarray:
    if seed == 0:
        # a real photograph: its smooth areas and edges, not only noise, go through the conversion
        bus = cv2.imread(str(shared_dir() / "images" / "bus.jpg"))
        assert bus is not None, f"no bus.jpg in {shared_dir() / 'images'} (EDGE_APP_SHARED)"
        return cv2.resize(bus, (width, height), interpolation=cv2.INTER_AREA)
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


@pytest.mark.parametrize("height, width, input_hw, seed", [
    (1080, 1920, (640, 640), 0), (1080, 1920, (640, 640), 1), (720, 1280, (384, 640), 2),
    (2160, 3840, (640, 640), 0), (1080, 810, (640, 640), 0), (36, 52, (640, 640), 3), (640, 640, (640, 640), 4),
])
def test_reference_equals_opencv_conversion_then_cpu_letterbox(height, width, input_hw, seed):
    nv12 = bgr_to_nv12(_frame(height, width, seed))
    reference, meta = letterbox_nv12_reference(nv12, input_hw)
    expected, expected_meta = letterbox(cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12), input_hw)
    assert meta == expected_meta
    assert np.array_equal(reference, expected)


def test_round_trip_through_nv12_keeps_the_picture():
    bgr = _frame(480, 640, 0)
    back = cv2.cvtColor(bgr_to_nv12(bgr), cv2.COLOR_YUV2BGR_NV12)
    # 4:2:0 chroma and limited range cost a little colour detail, never the picture
    assert np.abs(back.astype(int) - bgr).mean() < 6


def test_cpu_letterboxer_takes_nv12_frames_through_the_accessor():
    nv12 = bgr_to_nv12(_frame(720, 1280, 1))
    image = HostNv12Image(nv12)
    batch = Letterboxer((640, 640))([image])
    assert np.array_equal(batch.tensor[0], letterbox_nv12_reference(nv12, (640, 640))[0][0])
    assert image.conversions == 1
