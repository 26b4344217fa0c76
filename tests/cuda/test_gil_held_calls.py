"""Loading the driver calls that keep Python's lock (no GPU needed: the fall-back paths)."""
from __future__ import annotations

import ctypes

from edge_app.cuda import gil_held_calls


def test_a_missing_driver_library_means_cuda_python_only():
    assert gil_held_calls.load("libno-such-cuda-driver.so.1") is None


def test_a_driver_without_one_of_the_calls_means_cuda_python_only():
    """libc loads, but has none of the driver's symbols."""
    assert gil_held_calls.load("libc.so.6") is None


def test_calls_are_bound_with_their_argument_types_and_an_int_result():
    class FakeLibrary:
        def __init__(self):
            self.functions = {}

        def __getattr__(self, name):
            function = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)
            self.functions[name] = function
            return function

    library = FakeLibrary()
    calls = gil_held_calls.load("fake", loader=lambda _name: library)
    assert set(library.functions) == {"cuLaunchKernel", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
                                      "cuMemcpyDtoDAsync_v2"}
    assert len(calls.launch.argtypes) == 11 and calls.memcpy_dtod.restype is ctypes.c_int
