"""How the cuda-python adapter lays out kernel arguments for cuLaunchKernel (no GPU needed)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from edge_app.cuda.base import KernelArg
from edge_app.cuda.cuda_python import kernel_params


def _read(address: int, ctype):
    return ctype.from_address(address).value


@pytest.mark.parametrize("args", [
    [KernelArg.ptr(0x7F00_1234_5678), KernelArg.i32(1920), KernelArg.f32(0.447)],
    [KernelArg.i32(-5), KernelArg.ptr(0), KernelArg.f32(-1.5), KernelArg.i32(2**31 - 1)],
    [KernelArg.ptr(np.uint64(2**64 - 1)), KernelArg.i32(np.int32(7)), KernelArg.f32(np.float32(3.25))],
])
def test_each_pointer_leads_to_its_arguments_bytes(args):
    cells, pointers = kernel_params(args)
    assert len(pointers) == len(args)
    types = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "f32": ctypes.c_float}
    for pointer, arg in zip(pointers, args):
        value = _read(pointer, types[arg.kind])
        expected = np.float32(arg.value) if arg.kind == "f32" else arg.value
        assert value == expected
    assert ctypes.addressof(cells) == pointers[0]


def test_a_value_out_of_its_type_is_an_error_not_a_wrapped_number():
    with pytest.raises(Exception):
        kernel_params([KernelArg.i32(2**31)])
