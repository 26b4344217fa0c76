"""``HostMemoryCudaDevice`` with memory another process can map, for the engine-process tests.

NOT CUDA. Its "device" buffers are POSIX shared memory, ``ipc_export`` hands out the block's
name and ``ipc_open`` maps it, which is what CUDA IPC's handle, open and close do for device
memory. Everything else (synchronous streams, emulated kernels) is ``HostMemoryCudaDevice``.
"""
from __future__ import annotations

from multiprocessing import resource_tracker, shared_memory
from typing import Dict, List

import numpy as np

from edge_app.cuda.base import CudaError, DeviceBuffer
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice


class _SharedBuffer(DeviceBuffer):
    def __init__(self, block: shared_memory.SharedMemory, nbytes: int) -> None:
        self.block = block
        self.array = np.frombuffer(block.buf, np.uint8)
        self.ptr = int(self.array.ctypes.data)
        self.nbytes = nbytes

    def free(self) -> None:
        pass


class SharedHostCudaDevice(HostMemoryCudaDevice):
    adapter_name = "shared host-memory stand-in"

    def __init__(self, emulate_kernels: bool = True) -> None:
        super().__init__(emulate_kernels=emulate_kernels)
        self._owned_blocks: List[shared_memory.SharedMemory] = []
        self.opened: Dict[int, _SharedBuffer] = {}

    def alloc_device(self, nbytes: int) -> DeviceBuffer:
        block = shared_memory.SharedMemory(create=True, size=max(1, int(nbytes)))
        self._owned_blocks.append(block)
        buffer = _SharedBuffer(block, int(nbytes))
        self.buffers.append(buffer)
        return buffer

    def ipc_export(self, buffer: DeviceBuffer) -> bytes:
        if not isinstance(buffer, _SharedBuffer):
            raise CudaError("only this device's buffers can be shared")
        return buffer.block.name.encode()

    def ipc_open(self, handle: bytes) -> int:
        block = shared_memory.SharedMemory(name=handle.decode())
        resource_tracker.unregister(block._name, "shared_memory")  # the exporting process unlinks it
        buffer = _SharedBuffer(block, block.size)
        self.buffers.append(buffer)
        self.opened[buffer.ptr] = buffer
        return buffer.ptr

    def ipc_close(self, ptr: int) -> None:
        buffer = self.opened.pop(ptr)
        self.buffers.remove(buffer)
        buffer.array = None
        buffer.block.close()

    def close(self) -> None:
        super().close()
        for buffer in [b for b in self.buffers if isinstance(b, _SharedBuffer)]:
            buffer.array = None
        self.buffers = []
        for block in self._owned_blocks:
            block.close()
            block.unlink()
        self._owned_blocks = []


def open_shared_device(device_index: int = 0) -> SharedHostCudaDevice:
    """The engine process's device opener in tests (the product's is ``edge_app.cuda:open_device``)."""
    return SharedHostCudaDevice()
