"""NV12 frame images without a GPU: the numpy conversion against OpenCV, lazy conversion, sizes."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from edge_app.capture.gpu_image import (DeviceNv12Image, HostNv12Image, Nv12Planes, bgr_image, image_hw, nv12_hw,
                                        nv12_to_bgr, nv12_to_bgr_reference)


@pytest.mark.parametrize("height, width, seed", [(2, 2, 1), (8, 6, 2), (480, 640, 3), (1080, 1920, 4), (36, 1282, 5)])
def test_numpy_conversion_is_opencvs_bit_for_bit(height, width, seed):
    nv12 = np.random.default_rng(seed).integers(0, 256, (height * 3 // 2, width), dtype=np.uint8)
    assert np.array_equal(nv12_to_bgr_reference(nv12), cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12))


@pytest.mark.parametrize("y, u, v, bgr", [
    (16, 128, 128, (0, 0, 0)),          # limited-range black
    (235, 128, 128, (255, 255, 255)),   # limited-range white
    (0, 128, 128, (0, 0, 0)),           # below black clips
    (81, 90, 240, (0, 0, 255)),         # BT.601 red, within a level
])
def test_known_colours(y, u, v, bgr):
    nv12 = np.empty((3, 2), dtype=np.uint8)
    nv12[:2] = y
    nv12[2] = (u, v)
    out = nv12_to_bgr_reference(nv12)
    assert np.abs(out.astype(int) - np.array(bgr)).max() <= 1
    assert np.array_equal(out, cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12))


@pytest.mark.parametrize("shape, dtype", [((8, 4), np.uint8), ((6, 3), np.uint8), ((6, 4), np.uint16), ((6, 4, 1), np.uint8),
                                          ((0, 4), np.uint8), ((3, 0), np.uint8)])
def test_bad_nv12_arrays_are_refused(shape, dtype):
    with pytest.raises(ValueError):
        nv12_hw(np.zeros(shape, dtype=dtype))


def test_host_image_converts_once_and_only_when_asked():
    nv12 = np.random.default_rng(7).integers(0, 256, (720, 640), dtype=np.uint8)
    image = HostNv12Image(nv12)
    assert image.shape == (480, 640, 3) and image_hw(image) == (480, 640)
    assert image.conversions == 0
    first = bgr_image(image)
    assert bgr_image(image) is first and image.conversions == 1
    assert np.array_equal(first, nv12_to_bgr(nv12))
    assert not first.flags["WRITEABLE"]  # shared by every viewer of the frame


def _fake_device_image(nv12: np.ndarray, pitch_pad: int = 0):
    """A DeviceNv12Image whose 'device' is host memory, to test the download bookkeeping."""
    height, width = nv12_hw(nv12)
    calls = []

    def download(planes: Nv12Planes, host: np.ndarray) -> None:
        calls.append(planes)
        host[...] = nv12

    planes = Nv12Planes(1 << 20, (1 << 20) + (width + pitch_pad) * height, width + pitch_pad, width + pitch_pad,
                        width, height)
    return DeviceNv12Image(planes, download), calls


def test_device_image_downloads_once_and_only_when_asked():
    nv12 = np.random.default_rng(8).integers(0, 256, (540, 960), dtype=np.uint8)
    image, calls = _fake_device_image(nv12)
    assert image_hw(image) == (360, 960) and image.downloads == 0 and not calls
    bgr = bgr_image(image)
    assert np.array_equal(bgr, cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12))
    bgr_image(image)
    image.nv12_host()
    assert len(calls) == 1 and image.downloads == 1


@pytest.mark.parametrize("pitch_pad, packed", [(0, True), (64, False)])
def test_device_image_cuda_array_interface_only_when_packed(pitch_pad, packed):
    image, _ = _fake_device_image(np.zeros((12, 8), dtype=np.uint8), pitch_pad)
    assert image.planes.packed is packed
    if packed:
        cai = image.__cuda_array_interface__
        assert cai["shape"] == (12, 8) and cai["data"] == (1 << 20, False)
    else:
        assert not hasattr(image, "__cuda_array_interface__")


@pytest.mark.parametrize("width, height", [(3, 4), (4, 3), (0, 2)])
def test_device_image_needs_an_even_size(width, height):
    with pytest.raises(ValueError):
        DeviceNv12Image(Nv12Planes(1, 1, 4, 4, width, height), lambda planes, host: None)


def test_bgr_frames_pass_through_and_others_are_refused():
    bgr = np.zeros((4, 6, 3), dtype=np.uint8)
    assert bgr_image(bgr) is bgr and image_hw(bgr) == (4, 6)
    with pytest.raises(TypeError):
        bgr_image("not an image")
