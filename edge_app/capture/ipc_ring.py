"""The device memory a decoder process shares with the appliance: a few NV12 slots over CUDA IPC.

``CudaIpcRing`` lives in the decoder process: it allocates the slots and exports them, and
copies each decoded picture into one. ``CudaIpcReceiver`` lives in the appliance: it maps the
slots and copies a slot into a frame of its own ``DeviceFramePool``, so the frame stays valid
after the slot is reused or the decoder process is gone. Both copies are device to device.
(``decode_process`` says how slots go back and forth.)
"""
from __future__ import annotations

import logging
from typing import List, Sequence

from edge_app.capture.device_frames import DeviceFramePool
from edge_app.capture.sources import SourceError
from edge_app.cuda import CudaError, open_device
from edge_app.gpu_image import DeviceNv12Image, Nv12Planes

log = logging.getLogger(__name__)

#: frames the appliance may hold from one camera (pipeline, snapshot, live view), as in-process
RECEIVER_MAX_FRAMES = 16


class CudaIpcRing:
    """Exported slots of ``slot_nbytes`` each, in the decoder process."""

    def __init__(self, device_index: int, slot_nbytes: int, slots: int) -> None:
        self._device = open_device(device_index=device_index)
        self._stream = self._device.create_stream()
        self._buffers = [self._device.alloc_device(slot_nbytes) for _ in range(slots)]
        try:
            self.handles: List[bytes] = [self._device.ipc_export(buffer) for buffer in self._buffers]
        except CudaError as err:  # e.g. only pycuda installed: this will not work on a retry either
            self._device.close()
            raise SourceError(f"decoder nvdec hands frames over with CUDA IPC, which needs cuda-python: {err}") from None

    def put(self, slot: int, frame: DeviceNv12Image) -> None:
        """Copy ``frame`` into ``slot``; complete on return."""
        planes = frame.planes
        if not planes.packed or planes.nbytes > self._buffers[slot].nbytes:
            raise SourceError("a decoded picture does not fit the shared frame slots")
        self._device.memcpy_dtod_async(self._buffers[slot].ptr, planes.y_ptr, planes.nbytes, self._stream)
        self._stream.synchronize()

    def close(self) -> None:
        self._device.close()


class CudaIpcReceiver:
    """The slots of one decoder process, mapped into the appliance, and a pool for its frames."""

    def __init__(self, device_index: int, handles: Sequence[bytes]) -> None:
        self._device = open_device(device_index=device_index)
        self._ptrs: List[int] = []
        try:
            for handle in handles:
                self._ptrs.append(self._device.ipc_open(handle))
        except Exception:
            self.close()
            self._device.close()
            raise
        # the pool owns the device from here on: it closes it once its last frame is dropped
        self._pool = DeviceFramePool(self._device, RECEIVER_MAX_FRAMES, device_index)

    def take(self, slot: int, width: int, height: int) -> DeviceNv12Image:
        """A frame of this process's own, copied out of ``slot``."""
        ptr = self._ptrs[slot]
        return self._pool.copy_in(Nv12Planes(ptr, ptr + width * height, width, width, width, height))

    def close(self) -> None:
        for ptr in self._ptrs:
            try:
                self._device.ipc_close(ptr)
            except Exception as err:  # the decoder process may be gone already
                log.debug("closing a shared frame slot: %s", err)
        self._ptrs = []
