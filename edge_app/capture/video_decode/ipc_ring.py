"""The device memory a decoder process writes its pictures into: NV12 slots the appliance owns.

``CudaIpcSlots`` lives in the appliance: it allocates the slots and exports them with CUDA IPC,
and wraps a slot the decoder process filled as a ``DeviceNv12Image`` without copying it. The
slot stays the frame's until the last reference to the frame is dropped; only then may the
decoder process write it again. ``CudaIpcSlotWriter`` lives in the decoder process: it maps the
slots and copies each decoded picture into one, device to device.

Who may write a slot is kept in ``SlotStates``, a byte per slot in shared memory: the decoder
process marks a free slot held before it writes it, the appliance marks it free when the frame
goes. The appliance never waits to hand a slot back, so a frame can be dropped in any thread
without touching the pipe; a file's decoder process, which loses no picture, sleeps on a
semaphore the appliance posts when it gives a slot back. Because the appliance owns the memory,
its frames stay valid after the decoder process has exited (a reconnect, a crash).
(``child_process`` says how the slots are announced and used.)
"""
from __future__ import annotations

import logging
import multiprocessing
import threading
import weakref
from typing import Any, List, Optional, Sequence

import numpy as np

from edge_app.capture.sources import SourceError
from edge_app.cuda import CudaError, open_device
from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
from edge_app.capture.luma_shrinker import LumaShrinker

log = logging.getLogger(__name__)

FREE, HELD = 0, 1


class SlotStates:
    """One byte per slot in memory shared with the decoder process (made before it starts)."""

    def __init__(self, slots: int, context: Any = None) -> None:
        if slots < 1:
            raise ValueError("a decoder process needs at least one slot")
        # spawn: a semaphore made for fork is unlinked at once, and a spawned child could not open it
        context = context or multiprocessing.get_context("spawn")
        self._bytes = context.RawArray("B", slots)
        # Posted when a slot is given back; bounded by the slot count, so a live stream's process,
        # which never waits on it, cannot make it count up for ever. It only says "look again".
        self._freed = context.BoundedSemaphore(slots)
        while self._freed.acquire(False):
            pass

    def __len__(self) -> int:
        return len(self._bytes)

    def take_free(self) -> Optional[int]:
        """A free slot, now held (decoder process side); None when every slot is held."""
        for slot in range(len(self._bytes)):
            if self._bytes[slot] == FREE:
                self._bytes[slot] = HELD
                return slot
        return None

    def release(self, slot: int) -> None:
        """The appliance is done with ``slot``: the decoder process may write it again."""
        self._bytes[slot] = FREE
        try:
            self._freed.release()
        except ValueError:  # already posted as often as there are slots: the waiter will look anyway
            pass

    def wait_freed(self, timeout_s: float) -> None:
        """Sleep until a slot may have been given back, at most ``timeout_s`` (decoder process side)."""
        self._freed.acquire(True, timeout_s)

    def held(self) -> int:
        return sum(1 for state in self._bytes if state != FREE)


class _Lease:
    """Holds one slot for one frame; the slot is released when the lease is collected."""

    def __init__(self, slots: "CudaIpcSlots", slot: int) -> None:
        self.slots = slots  # keeps the memory alive as long as the frame
        weakref.finalize(self, slots.states.release, slot)


class CudaIpcSlots:
    """``len(states)`` slots of ``slot_nbytes`` each on one GPU, exported, in the appliance."""

    def __init__(self, device_index: int, slot_nbytes: int, states: SlotStates) -> None:
        self.states = states
        self.slot_nbytes = int(slot_nbytes)
        self.device_index = device_index
        device = open_device(device_index=device_index)
        buffers: List[Any] = []
        try:
            buffers.extend(device.alloc_device(self.slot_nbytes) for _ in range(len(states)))
            self.handles: List[bytes] = [device.ipc_export(buffer) for buffer in buffers]
        except CudaError as err:  # e.g. only pycuda installed: this will not work on a retry either
            _free(device, buffers)
            raise SourceError(f"decoder nvdec hands frames over with CUDA IPC, which needs cuda-python: {err}") from None
        except BaseException:
            _free(device, buffers)
            raise
        self._ptrs = [buffer.ptr for buffer in buffers]
        self._device = device
        self._download_stream = device.create_stream()
        self._download_lock = threading.Lock()
        self.shrinker = LumaShrinker(device)  # motion gating's small grey picture, made on the GPU
        # after the last frame (each holds this object) and after the decoder process let go
        weakref.finalize(self, _free, device, buffers)

    def frame(self, slot: int, width: int, height: int) -> DeviceNv12Image:
        """The picture the decoder process wrote into ``slot``, as a frame that holds the slot."""
        if width * height * 3 // 2 > self.slot_nbytes:
            raise SourceError(f"a {width}x{height} picture does not fit the shared frame slots")
        ptr = self._ptrs[slot]
        planes = Nv12Planes(ptr, ptr + width * height, width, width, width, height)
        return DeviceNv12Image(planes, self._download, keepalive=_Lease(self, slot), device_index=self.device_index,
                               shrink=self.shrinker)

    def _download(self, planes: Nv12Planes, host: np.ndarray) -> None:
        # API and event threads download; the capture thread never waits for them
        with self._download_lock:
            self._device.memcpy_dtoh_async(host.reshape(-1), planes.y_ptr, self._download_stream)
            self._download_stream.synchronize()


def _free(device: Any, buffers: Sequence[Any]) -> None:
    for buffer in buffers:
        try:
            buffer.free()
        except Exception as err:  # a device in a bad state: the process exit frees it anyway
            log.debug("freeing a shared frame slot: %s", err)
    device.close()


class CudaIpcSlotWriter:
    """The appliance's slots, mapped into the decoder process."""

    def __init__(self, device_index: int, handles: Sequence[bytes], slot_nbytes: int) -> None:
        self._slot_nbytes = int(slot_nbytes)
        self._device = open_device(device_index=device_index)
        self._stream = self._device.create_stream()
        self._ptrs: List[int] = []
        try:
            for handle in handles:
                self._ptrs.append(self._device.ipc_open(handle))
        except BaseException:
            self.close()
            raise

    def put(self, slot: int, frame: DeviceNv12Image) -> None:
        """Copy ``frame`` into ``slot``; complete on return."""
        planes = frame.planes
        if not planes.packed or planes.nbytes > self._slot_nbytes:
            raise SourceError("a decoded picture does not fit the shared frame slots")
        self._device.memcpy_dtod_async(self._ptrs[slot], planes.y_ptr, planes.nbytes, self._stream)
        self._stream.synchronize()

    def close(self) -> None:
        for ptr in self._ptrs:
            try:
                self._device.ipc_close(ptr)
            except Exception as err:
                log.debug("unmapping a shared frame slot: %s", err)
        self._ptrs = []
        self._device.close()
