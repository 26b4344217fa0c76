"""Frame: BGR frames as before, NV12 frames sized without converting and converted on demand."""
from __future__ import annotations

import numpy as np
import pytest

from edge_app.capture.frame import Frame
from edge_app.capture.gpu_image import HostNv12Image, nv12_to_bgr


@pytest.mark.parametrize("height, width", [(480, 640), (1080, 1920), (2, 2)])
def test_sizes_and_pixels_of_bgr_and_nv12_frames(height, width):
    bgr = np.random.default_rng(height).integers(0, 256, (height, width, 3), dtype=np.uint8)
    frame = Frame("cam", 1, 0.0, 0.0, bgr)
    assert (frame.width, frame.height) == (width, height) and frame.bgr() is bgr

    nv12 = np.random.default_rng(width).integers(0, 256, (height * 3 // 2, width), dtype=np.uint8)
    image = HostNv12Image(nv12)
    frame = Frame("cam", 2, 0.0, 0.0, image)
    assert (frame.width, frame.height) == (width, height)
    assert image.conversions == 0  # sizes never convert
    assert np.array_equal(frame.bgr(), nv12_to_bgr(nv12)) and frame.bgr() is frame.bgr()
    assert image.conversions == 1
