"""The GPU letterbox kernel's arithmetic (emulated in numpy) against the CPU letterbox.

The kernel follows OpenCV's 8-bit INTER_LINEAR step for step (half-pixel centres, 11-bit
weights, the vectorised vertical pass), so the emulation must match the CPU path exactly except
for OpenCV's scalar row tails, and always within 1/255. The real kernel is compared with the
CPU path on a GPU in tests/gpu/.
"""
from __future__ import annotations

import numpy as np
import pytest

from edge_app.detect.letterbox_gpu import PAD_VALUE_F32
from edge_app.detect.letterbox import letterbox, resized_wh
from testkit.tensorrt_standin.kernel_emulation import emulate_letterbox

TOLERANCE = 1.0 / 255.0 + 1e-6


def _emulated(frame, dst_hw):
    tensor, meta = letterbox(frame, dst_hw)
    out = emulate_letterbox(frame, dst_hw, resized_wh(meta.src_hw, meta.scale), meta.pad_xy, PAD_VALUE_F32)
    return tensor[0], out


@pytest.mark.parametrize("shape", [(1080, 1920), (2160, 3840), (1081, 1917), (480, 641), (300, 200), (37, 53),
                                   (640, 640), (1, 1), (1, 700)])
@pytest.mark.parametrize("dst_hw", [(640, 640), (384, 640)])
def test_emulated_kernel_matches_cpu_letterbox(shape, dst_hw):
    frame = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, 3), dtype=np.uint8)
    cpu, gpu = _emulated(frame, dst_hw)
    diff = np.abs(cpu - gpu)
    assert diff.max() <= TOLERANCE
    assert (diff > 1e-7).mean() < 0.01  # off-by-one levels only in OpenCV's row tails


def test_emulated_kernel_on_real_images(bus_image, zidane_image):
    for frame in (bus_image, zidane_image):
        cpu, gpu = _emulated(frame, (640, 640))
        assert np.abs(cpu - gpu).max() <= TOLERANCE


def test_pad_value_is_the_cpu_path_value():
    frame = np.zeros((100, 400, 3), np.uint8)
    cpu, gpu = _emulated(frame, (640, 640))
    assert cpu[0, 0, 0] == np.float32(PAD_VALUE_F32) == gpu[0, 0, 0]
