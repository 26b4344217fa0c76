"""The CUDA layer on a real GPU, through each installed adapter (cuda-python, pycuda)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from edge_app.cuda import CudaError, KernelArg, kernel_options_for

pytestmark = pytest.mark.gpu

SCALE_ADD = r"""
extern "C" __global__ void scale_add(const float* x, float* y, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_device_properties(device):
    info = device.describe()
    assert device.name and info["adapter"] == device.adapter_name
    assert device.compute_capability >= (5, 0)
    assert device.driver_version.count(".") == 1
    assert device.has_nvrtc, "NVRTC should be found next to the CUDA toolkit"


def test_pinned_host_arrays(device):
    a = device.alloc_pinned((2, 3, 640, 640), np.float32)
    b = device.alloc_pinned(1000, np.uint8)
    c = device.alloc_pinned((7, 5), np.int32)
    for array, shape, dtype in ((a, (2, 3, 640, 640), np.float32), (b, (1000,), np.uint8), (c, (7, 5), np.int32)):
        assert array.shape == shape and array.dtype == dtype and array.flags["C_CONTIGUOUS"] and array.flags["WRITEABLE"]
    a[...] = 0.5
    assert float(a.sum()) == 0.5 * a.size


def test_round_trip_through_device_memory_on_a_stream(device, gpu_results):
    nbytes = 64 << 20
    src = device.alloc_pinned(nbytes, np.uint8)
    dst = device.alloc_pinned(nbytes, np.uint8)
    src[...] = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8)
    first, second = device.alloc_device(nbytes), device.alloc_device(nbytes)
    stream = device.create_stream()
    start_s = time.perf_counter()
    device.memcpy_htod_async(first.ptr, src, stream)
    device.memcpy_dtod_async(second.ptr, first.ptr, nbytes, stream)
    device.memcpy_dtoh_async(dst, second.ptr, stream)
    enqueued_s = time.perf_counter()
    stream.synchronize()
    done_s = time.perf_counter()
    assert np.array_equal(src, dst)
    enqueue_ms, total_ms = (enqueued_s - start_s) * 1e3, (done_s - start_s) * 1e3
    # the copies run after the calls return: enqueueing is a fraction of the whole
    assert enqueue_ms < total_ms
    gpu_results.setdefault(device.adapter_name, {})["round_trip_64MiB"] = {
        "enqueue_ms": round(enqueue_ms, 3), "total_ms": round(total_ms, 3),
        "h2d_d2d_d2h_GBps": round(3 * nbytes / (done_s - start_s) / 1e9, 2)}


def test_copies_are_asynchronous(device, gpu_results):
    nbytes = 512 << 20
    host = device.alloc_pinned(nbytes, np.uint8)
    buffer = device.alloc_device(nbytes)
    stream = device.create_stream()
    device.memcpy_htod_async(buffer.ptr, host, stream)
    stream.synchronize()
    start_s = time.perf_counter()
    device.memcpy_htod_async(buffer.ptr, host, stream)
    returned_ms = (time.perf_counter() - start_s) * 1e3
    stream.synchronize()
    total_ms = (time.perf_counter() - start_s) * 1e3
    gpu_results.setdefault(device.adapter_name, {})["async_h2d_512MiB"] = {
        "call_returned_ms": round(returned_ms, 3), "copy_done_ms": round(total_ms, 3),
        "h2d_GBps": round(nbytes / total_ms / 1e6, 2)}
    assert returned_ms < 0.5 * total_ms, (returned_ms, total_ms)


def test_two_streams_do_not_mix(device):
    n = 1 << 20
    hosts = [device.alloc_pinned(n, np.float32) for _ in range(4)]
    buffers = [device.alloc_device(n * 4) for _ in range(2)]
    streams = [device.create_stream() for _ in range(2)]
    assert streams[0].handle != streams[1].handle
    for i in range(2):
        hosts[i][...] = i + 1
        device.memcpy_htod_async(buffers[i].ptr, hosts[i], streams[i])
        device.memcpy_dtoh_async(hosts[i + 2], buffers[i].ptr, streams[i])
    for stream in streams:
        stream.synchronize()
    assert (hosts[2] == 1).all() and (hosts[3] == 2).all()


def test_nvrtc_kernel_compile_and_launch(device):
    n = 100_003
    x = device.alloc_pinned(n, np.float32)
    y = device.alloc_pinned(n, np.float32)
    x[...] = np.arange(n, dtype=np.float32)
    y[...] = 1.0
    dx, dy = device.alloc_device(x.nbytes), device.alloc_device(y.nbytes)
    stream = device.create_stream()
    kernel = device.compile_kernel(SCALE_ADD, "scale_add", kernel_options_for(device.compute_capability))
    device.memcpy_htod_async(dx.ptr, x, stream)
    device.memcpy_htod_async(dy.ptr, y, stream)
    device.launch(kernel, ((n + 255) // 256, 1, 1), (256, 1, 1),
                  [KernelArg.ptr(dx.ptr), KernelArg.ptr(dy.ptr), KernelArg.i32(n), KernelArg.f32(2.0)], stream)
    device.memcpy_dtoh_async(y, dy.ptr, stream)
    stream.synchronize()
    np.testing.assert_allclose(y, 2.0 * np.arange(n, dtype=np.float32) + 1.0)


def test_compile_errors_carry_the_compiler_log(device):
    with pytest.raises(CudaError, match="NVRTC could not compile broken.*(error|undefined)"):
        device.compile_kernel('extern "C" __global__ void broken() { undefined_thing(); }', "broken",
                              kernel_options_for(device.compute_capability))


def test_another_thread_can_use_the_device(device):
    """The pipeline preprocesses and infers on different threads."""
    out, errors = {}, []

    def work():
        try:
            host = device.alloc_pinned(1024, np.float32)
            host[...] = 3.0
            buffer = device.alloc_device(host.nbytes)
            stream = device.create_stream()
            back = device.alloc_pinned(1024, np.float32)
            device.memcpy_htod_async(buffer.ptr, host, stream)
            device.memcpy_dtoh_async(back, buffer.ptr, stream)
            stream.synchronize()
            out["sum"] = float(back.sum())
        except Exception as err:  # reported by the assertion below
            errors.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert not errors and out["sum"] == 3.0 * 1024


def test_cuda_python_queues_work_without_letting_go_of_pythons_lock(device):
    """Launches and asynchronous copies go through ``gil_held_calls`` (the kernel and copy tests
    in this folder then run through it)."""
    if device.adapter_name != "cuda-python":
        pytest.skip("only the cuda-python adapter has the lock-keeping calls")
    assert device.queueing_calls_keep_gil and device.describe()["queueing_calls_keep_gil"]
