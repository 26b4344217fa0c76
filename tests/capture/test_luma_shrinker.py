"""``LumaShrinker``'s plumbing (buffers per size, arguments, the copy back) on a device whose memory
is host memory and whose kernel is the kernel's numpy reference; the kernel itself runs on a GPU
in tests/gpu/test_luma_shrink_kernel.py."""
from __future__ import annotations

import ctypes
import types

import cv2

import numpy as np
import pytest

from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
from edge_app.capture.luma_shrinker import MAX_SIZES, LumaShrinker
from edge_app.cuda.base import CudaDevice
from edge_app.cuda.kernels.luma_shrink import (KERNEL_SHRINK_BLUR_LUMA, KERNEL_SHRINK_LUMA, SOURCE,
                                                luma_shrink_blur_reference, luma_shrink_reference)


class _HostMemoryDevice:
    compute_capability = (9, 0)

    def __init__(self):
        self.memory = {}  # address -> the array that lives there
        self.launches, self.compiled, self.freed = [], [], 0

    def compile_kernel(self, source, name, options=()):
        assert source == SOURCE and name in (KERNEL_SHRINK_LUMA, KERNEL_SHRINK_BLUR_LUMA)
        self.compiled.append(name)
        return name

    def create_stream(self):
        return types.SimpleNamespace(synchronize=lambda: None)

    def alloc_device(self, nbytes):
        array = np.zeros(nbytes, np.uint8)
        self.memory[array.ctypes.data] = array

        def free():
            self.freed += 1

        return types.SimpleNamespace(ptr=array.ctypes.data, nbytes=nbytes, free=free)

    def alloc_pinned(self, shape, dtype):
        return np.zeros(shape, dtype)

    def launch(self, kernel, grid, block, args, stream):
        y_ptr, pitch, width, height, out_ptr, out_w, out_h = [arg.value for arg in args[:7]]
        assert [arg.kind for arg in args[:7]] == ["ptr", "i32", "i32", "i32", "ptr", "i32", "i32"]
        assert grid[0] * block[0] >= out_w and grid[1] * block[1] >= out_h
        rows = (ctypes.c_uint8 * (pitch * height)).from_address(y_ptr)
        y = np.frombuffer(rows, np.uint8).reshape(height, pitch)[:, :width]
        if kernel == KERNEL_SHRINK_BLUR_LUMA:
            assert block[:2] == (32, 8), "the kernel's shared tiles are made for 32 x 8 blocks"
            assert [arg.kind for arg in args[7:]] == ["f32"] * 5
            taps = np.array([arg.value for arg in args[7:]], np.float32)
            picture = luma_shrink_blur_reference(y, out_w, out_h, taps)
            self.memory[out_ptr][:picture.nbytes] = picture.view(np.uint8).ravel()
        else:
            self.memory[out_ptr][:out_w * out_h] = luma_shrink_reference(y, out_w, out_h).ravel()
        self.launches.append((out_w, out_h))

    def pack_args(self, args):
        return CudaDevice.pack_args(self, args)

    def launch_packed(self, kernel, grid, block, packed, stream):
        self.launch(kernel, grid, block, packed.args, stream)

    def memcpy_dtoh_async(self, dst, src_ptr, stream):
        dst.view(np.uint8)[...] = self.memory[src_ptr][:dst.nbytes]


def _frame(device, y, pitch, shrinker):
    height, width = y.shape
    buffer = device.alloc_device(pitch * height * 3 // 2)
    plane = device.memory[buffer.ptr][:pitch * height].reshape(height, pitch)
    plane[:, :width] = y
    planes = Nv12Planes(buffer.ptr, buffer.ptr + pitch * height, pitch, pitch, width, height)
    return DeviceNv12Image(planes, lambda p, host: pytest.fail("no download"), keepalive=buffer, shrink=shrinker)


def test_the_small_picture_comes_back_and_each_call_gets_its_own_copy():
    device = _HostMemoryDevice()
    shrinker = LumaShrinker(device)
    first_y = np.random.default_rng(0).integers(0, 256, (360, 640), dtype=np.uint8)
    second_y = np.random.default_rng(1).integers(0, 256, (360, 640), dtype=np.uint8)
    first = _frame(device, first_y, 704, shrinker).small_grey(320, 180)
    second = _frame(device, second_y, 640, shrinker).small_grey(320, 180)
    assert np.array_equal(first, luma_shrink_reference(first_y, 320, 180))  # not overwritten by the second call
    assert np.array_equal(second, luma_shrink_reference(second_y, 320, 180))
    assert device.compiled == [KERNEL_SHRINK_LUMA] and shrinker.calls == 2


def test_buffers_are_kept_per_size_and_a_few_sizes_at_most():
    device = _HostMemoryDevice()
    shrinker = LumaShrinker(device)
    image = _frame(device, np.zeros((360, 640), np.uint8), 640, shrinker)
    allocated = len(device.memory)
    image.small_grey(320, 180)
    image.small_grey(320, 180)
    assert len(device.memory) == allocated + 1  # one device buffer for the size, reused
    for width in range(100, 100 + MAX_SIZES + 1):
        image.small_grey(width, 90)
    assert device.freed >= MAX_SIZES  # the old ones went when the set was full
    with pytest.raises(ValueError):
        image.small_grey(1280, 720)  # larger than the frame


def test_the_blurred_picture_is_the_detectors_and_comes_back_as_float32():
    """What the motion detector asks of a device frame (``MotionDetector.picture``): the shrink and
    its blur in one launch, with the detector's taps; a frame without a shrinker falls back to
    the host's small grey picture."""
    from edge_app.motion.detector import MotionDetector, small_grey

    device = _HostMemoryDevice()
    shrinker = LumaShrinker(device)
    y = np.random.default_rng(2).integers(0, 256, (360, 640), dtype=np.uint8)
    detector = MotionDetector()
    picture = detector.picture(_frame(device, y, 640, shrinker))
    taps = cv2.getGaussianKernel(5, 0, cv2.CV_32F)
    assert picture.dtype == np.float32 and picture.shape == (180, 320)
    assert np.array_equal(picture, luma_shrink_blur_reference(y, 320, 180, taps))
    assert device.compiled == [KERNEL_SHRINK_BLUR_LUMA]
    with pytest.raises(ValueError, match="5 taps"):
        shrinker.blurred(_frame(device, y, 640, shrinker).planes, 320, 180, np.ones(7, np.float32))
    plain = _frame(device, y, 640, None)
    plain.nv12_host = lambda: np.vstack([y, np.zeros((180, 640), np.uint8)])
    assert np.array_equal(detector.picture(plain), small_grey(plain))


def test_a_gpu_blur_that_fails_leaves_motion_to_the_host_blur(caplog):
    """The blur on the GPU is a faster path only: if its launch fails (a driver or compiler the
    kernel does not suit), the detector says so once and takes the small grey picture from then on."""
    from edge_app.motion.detector import MotionDetector, small_grey

    device = _HostMemoryDevice()
    shrinker = LumaShrinker(device)
    failures = []

    def broken(*args):
        failures.append(args)
        raise RuntimeError("CUDA_ERROR_INVALID_PTX")

    shrinker.blurred = broken
    y = np.random.default_rng(4).integers(0, 256, (360, 640), dtype=np.uint8)
    image = _frame(device, y, 640, shrinker)
    detector = MotionDetector()
    first, second = detector.picture(image), detector.picture(image)
    assert first.dtype == np.uint8 and np.array_equal(first, small_grey(image)) and np.array_equal(second, first)
    assert len(failures) == 1 and "blurring on the host" in caplog.text


def test_a_slot_is_packed_once_and_a_new_slot_or_size_packs_again():
    """The arguments of a launch are made once per frame slot and size (they cost more than the
    launch): the same slot again reuses them, another slot or size packs its own, and the
    pictures stay each frame's own."""
    device = _HostMemoryDevice()
    packed = []
    device.pack_args = lambda args: packed.append(args) or CudaDevice.pack_args(device, args)
    shrinker = LumaShrinker(device)
    rng = np.random.default_rng(5)
    ys = [rng.integers(0, 256, (360, 640), dtype=np.uint8) for _ in range(2)]
    slots = [_frame(device, y, 640, shrinker) for y in ys]
    for _ in range(3):
        for y, slot in zip(ys, slots):
            assert np.array_equal(slot.small_grey(320, 180), luma_shrink_reference(y, 320, 180))
    assert len(packed) == 2 and shrinker.calls == 6
    slots[0].small_grey(160, 90)
    assert len(packed) == 3
    plane = device.memory[slots[0].planes.y_ptr][:640 * 360].reshape(360, 640)
    plane[:] = ys[1]  # a slot's next frame: the same arguments, the new pixels
    assert np.array_equal(slots[0].small_grey(320, 180), luma_shrink_reference(ys[1], 320, 180))
    assert len(packed) == 3
