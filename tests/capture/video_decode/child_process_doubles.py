"""Test doubles for ``child_process``, imported by the decoder processes the tests spawn.

They implement the named seams of the real thing: the opener (``nvdec_source.open_nvdec``'s
signature) and the slots (``ipc_ring.CudaIpcSlots`` / ``CudaIpcSlotWriter``), with pictures in
POSIX shared memory instead of NVDEC pictures in CUDA IPC memory. Everything else - the
processes, the pipe protocol, the slot states and the leases that free them, parking, errors -
is the product's code.

The "source" is a JSON file: ``{"frames": N, "live": bool, "fail_after": K | null,
"crash_after": K | null, "open_error": "source" | "unavailable" | null, "delay_s": s,
"rewind": "ok" | "fails" | "no_frame" | null}``; frame i is an NV12 picture whose first byte is
i % 256, whose second is the pass number in this process (an open or a rewind starts a pass) and
whose third is the number of opens in this process. With ``rewind`` the source has
``NvdecSource.rewind``: it starts over, raises, or starts over and then gives no frame.
"""
from __future__ import annotations

import json
from fractions import Fraction
import os
import time
import weakref
from multiprocessing import shared_memory
from typing import List, Sequence

import numpy as np

from edge_app.capture.video_decode.ipc_ring import CudaIpcSlots, SlotStates
from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.capture.gpu_image import HostNv12Image, Nv12Planes

WIDTH, HEIGHT = 32, 16


class _Source:
    def __init__(self, plan: dict, opens: int, packet_sink=None) -> None:
        self.plan, self.live, self.fps = plan, bool(plan.get("live")), 30.0
        self.index, self.opens = 0, opens
        _PASSES.append(plan)
        self.passes = len(_PASSES)
        # a recorded camera: packet i is b"pkt" + i, one per frame, a keyframe every 5
        self.packet_sink = packet_sink
        if packet_sink is not None:
            packet_sink.stream_opened(StreamInfo("", "h264", WIDTH, HEIGHT, Fraction(1, 90000), b"\0\0\0\1sps",
                                                 template=object()))

    def read(self):
        plan = self.plan
        if plan.get("crash_after") is not None and self.index >= plan["crash_after"]:
            os._exit(3)
        if plan.get("fail_after") is not None and self.index >= plan["fail_after"]:
            raise OSError("the stream broke")
        if self.index >= plan["frames"]:
            return None
        time.sleep(plan.get("delay_s", 0.0))
        if self.packet_sink is not None:
            self.packet_sink.packet(EncodedPacket(b"pkt%d" % self.index, 3000 * self.index, 3000 * self.index,
                                                  self.index % 5 == 0, time.time()))
        nv12 = np.zeros((HEIGHT * 3 // 2, WIDTH), np.uint8)
        nv12[0, 0], nv12[0, 1], nv12[0, 2] = self.index % 256, self.passes, self.opens
        self.index += 1
        return HostNv12Image(nv12)

    def release(self) -> None:
        if self.packet_sink is not None:
            self.packet_sink.stream_closed("source closed")


class _RewindableSource(_Source):
    def rewind(self) -> bool:
        how = self.plan["rewind"]
        if how == "fails":
            raise RuntimeError("the decoder refused the file's first packets")
        _PASSES.append(self.plan)
        self.passes = len(_PASSES)
        self.index = self.plan["frames"] if how == "no_frame" else 0
        return True


#: sources opened by this decoder process, and passes begun (opens and rewinds)
_OPENED_HERE: List[str] = []
_PASSES: List[dict] = []


def open_json_source(spec, capture, device_index=0, packet_sink=None):
    plan = json.loads(open(spec.target).read())
    kind = plan.get("open_error")
    if kind == "source":
        raise SourceError("this source can never be opened")
    if kind == "unavailable":
        raise SourceUnavailable("this source is offline")
    _OPENED_HERE.append(spec.target)
    return (_RewindableSource if plan.get("rewind") else _Source)(plan, len(_OPENED_HERE), packet_sink)


class SharedMemorySlots(CudaIpcSlots):
    """``ipc_ring.CudaIpcSlots`` with the slots in POSIX shared memory: only the memory and the
    download are the double's; the frames, their leases and the slot states are the product's."""

    def __init__(self, device_index: int, slot_nbytes: int, states: SlotStates) -> None:  # no super(): no GPU here
        self.states, self.slot_nbytes, self.device_index = states, int(slot_nbytes), device_index
        self._blocks = [shared_memory.SharedMemory(create=True, size=self.slot_nbytes) for _ in range(len(states))]
        self.handles: List[bytes] = [block.name.encode() for block in self._blocks]
        self._ptrs = [int(np.frombuffer(block.buf, np.uint8).ctypes.data) for block in self._blocks]
        self.shrinker = None  # no GPU: motion downloads the Y plane, as for any owner that cannot shrink
        weakref.finalize(self, _unlink, self._blocks)

    def _download(self, planes: Nv12Planes, host: np.ndarray) -> None:
        block = self._blocks[self._ptrs.index(planes.y_ptr)]
        host.reshape(-1)[:] = np.frombuffer(block.buf, np.uint8, host.size)


def _unlink(blocks) -> None:
    for block in blocks:
        block.close()
        block.unlink()


class SharedMemoryWriter:
    """``ipc_ring.CudaIpcSlotWriter`` for the shared-memory slots, in the decoder process."""

    def __init__(self, device_index: int, handles: Sequence[bytes], slot_nbytes: int) -> None:
        self._blocks = [shared_memory.SharedMemory(name=handle.decode()) for handle in handles]
        # No unregistering: a spawned process shares the appliance's resource tracker, where the
        # appliance registered these blocks and unregisters them when it unlinks them.
        self._slot_nbytes = slot_nbytes

    def put(self, slot: int, frame: HostNv12Image) -> None:
        data = frame.nv12.reshape(-1)
        if data.size > self._slot_nbytes:
            raise SourceError("a decoded picture does not fit the shared frame slots")
        np.frombuffer(self._blocks[slot].buf, np.uint8, data.size)[:] = data

    def close(self) -> None:
        for block in self._blocks:
            block.close()
