"""Decoding a camera in a child process, frames handed over in GPU memory.

Decoders in threads of one process take turns on Python's interpreter lock: on an H200, eight
NVDEC decoders in threads gave 513 frames/s in all at Python's default switch interval and
1817 at the appliance's 0.5 ms, eight in processes 2793-3141. Each ``decoder: nvdec`` camera
therefore decodes in its own process by default (as Frigate runs FFmpeg in one per camera),
which also keeps a decoder that crashes from taking the appliance with it.

The child opens the source with the in-process opener (``nvdec_source.open_nvdec``) and copies
each picture into one of ``RING_SLOTS`` slots of device memory that the parent allocated and
exported with CUDA IPC (``ipc_ring``). It then sends the slot's number over a pipe, and the
parent hands the slot itself on as the frame: no copy and no wait in the camera's thread, and
the picture never reaches the host. The slot is the frame's until the last reference to the
frame is dropped, which marks it free in shared memory; the pipe carries no messages back for
it. Frames outlive the child, since the parent owns their memory. A file's child waits for a
free slot (no frame is lost); a live stream's child keeps reading and drops a picture when every
slot is taken, counted.

Messages (pickled tuples on a ``multiprocessing`` pipe), child to parent: ``("opened", info)``
with the first picture's size, ``("frame", slot, width, height, dropped, skipped)``,
``("end", dropped, skipped)``, ``("error", kind, text)``; parent to child: ``("slots", handles, slot_nbytes)`` in answer to
every ``opened`` (``handles`` None: keep the slots it has), ``("reopen",)``, ``("stop",)``, and
``("pace", interval_s)`` whenever the camera's schedule changes. A recorded camera's child also
sends its demuxer's packets, in order with the frames (``process_packets``); the parent hands them
to the camera's sink while it waits for a frame.

Pictures the appliance would drop before converting them (``fps_limit``, an idle motion gate)
are dropped in the child, before they are copied out of the decoder's surface (``pace.Pace``):
only the kept ones are copied, announced and handed over, the rest are counted (``skipped``),
so a static camera costs the decoder and nothing after it (its packets are still recorded). At the
end of a file the child waits to be told to start again (``loop: true`` reopens through the same
process, without a new one and a new CUDA context every pass, and rewinds the file on the
decoder it has where the source can: ``NvdecSource.rewind``) or to stop; unused for
``PARK_TIMEOUT_S``, it exits.

``capture.nvdec_processes: false`` decodes in the camera's thread instead (less CPU and GPU
memory: each process has its own CUDA context).

What opens the source in the child and how slots are shared are named as ``module:attribute``
strings, since the child is a fresh interpreter (``spawn``: CUDA does not survive ``fork``). The
child's side is ``child_main``.
"""
from __future__ import annotations

import logging
import multiprocessing
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from edge_app.capture.video_decode.child_main import (CUDA_WRITER, END, ERROR, FRAME, NVDEC_OPENER, OPENED, PACE, REOPEN, SLOTS,
                                           STOP, ChildPlan, child_main)
from edge_app.capture.video_decode.ipc_ring import SlotStates
from edge_app.capture.packets import PacketSink
from edge_app.capture.video_decode.process_packets import forward
from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import SourceSpec
from edge_app.process.named_callable import resolve
from edge_app.config.redact import mask_secrets

log = logging.getLogger(__name__)

#: frames of one camera the appliance may hold at once (read ahead, batches under way, the
#: newest for snapshots and live view) plus the one the child is writing: 50 MB at 1080p
RING_SLOTS = 16
#: starting an interpreter and importing the decoder, on top of the source's own open timeout
SPAWN_ALLOWANCE_S = 30.0

CUDA_SLOTS = "edge_app.capture.video_decode.ipc_ring:CudaIpcSlots"


# -- the parent ---------------------------------------------------------------------------------
@dataclass
class _Process:
    process: Any
    conn: Any
    states: SlotStates
    #: the frame slots the process writes into (``CudaIpcSlots``), once it has opened its source
    slots: Any = None


class ProcessSource:
    """A FrameSource whose frames come from a decoder process (see the module's docstring)."""

    def __init__(self, child: _Process, info: Dict[str, Any], what: str, stall_timeout_s: float,
                 park: Callable[[_Process], None], packet_sink: Optional[PacketSink] = None) -> None:
        self._child, self._what, self._stall_timeout_s, self._park = child, what, stall_timeout_s, park
        self._packet_sink = packet_sink
        self.live = bool(info["live"])
        self.fps = float(info["fps"] or 0.0)
        self.dropped = 0
        self._ended = False
        self._pace_s: Optional[float] = None
        self._skipped = self._skipped_counted = 0

    def pace(self, interval_s: float) -> None:
        """Keep one picture per ``interval_s`` (0: all); the process drops the others before copying them."""
        child = self._child
        if child is not None and interval_s != self._pace_s:
            self._pace_s = interval_s
            child.conn.send((PACE, float(interval_s)))

    def take_skipped(self) -> int:
        """Pictures the process dropped on the schedule since the last call."""
        count, self._skipped_counted = self._skipped - self._skipped_counted, self._skipped
        return max(0, count)

    def read(self) -> Any:
        child = self._child
        if child is None or self._ended:
            return None
        deadline_s = time.monotonic() + self._stall_timeout_s
        message: tuple = ()
        while not message or forward(message, self._packet_sink):  # a recorded camera's packets come first
            if not child.conn.poll(max(0.0, deadline_s - time.monotonic())):
                return None  # stalled: the camera reconnects, which replaces the process
            try:
                message = child.conn.recv()
            except (EOFError, OSError):
                child.process.join(1.0)
                raise RuntimeError(f"the decoder process for {self._what} exited (code {child.process.exitcode})") from None
        if message[0] == FRAME:
            _, slot, width, height, self.dropped = message[:5]
            self._skipped = int(message[5]) if len(message) > 5 else self._skipped
            try:
                return child.slots.frame(int(slot), int(width), int(height))
            except BaseException:
                child.states.release(int(slot))
                raise
        if message[0] == END:
            self._ended, self.dropped = True, int(message[1])
            self._skipped = int(message[2]) if len(message) > 2 else self._skipped
            return None
        raise RuntimeError(f"decoding {self._what} failed: {message[2] if len(message) > 2 else message}")

    def release(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        if self._ended and child.process.is_alive():
            self._park(child)  # the end of a file: the next open starts it again in this process
        else:
            stop(child)


def stop(child: _Process, timeout_s: float = 2.0) -> None:
    try:
        child.conn.send((STOP,))
    except (OSError, ValueError):
        pass
    child.process.join(timeout_s)
    if child.process.is_alive():
        child.process.kill()
        child.process.join(timeout_s)
    # the slots' memory goes with the last frame that holds one of them, not before
    child.slots = None
    child.conn.close()


def _nbytes(info: Dict[str, Any]) -> int:
    """The size of an NV12 picture of the size an ``opened`` message gives."""
    return int(info["width"]) * int(info["height"]) * 3 // 2


class DecodeProcessOpener:
    """Opens a camera's source in a decoder process; keeps the process of a file that ended.

    One per camera (each ``CameraOpener`` makes its own), so a parked process is only ever
    reused for the same camera.
    """

    def __init__(self, opener: str = NVDEC_OPENER, writer: str = CUDA_WRITER, slots: str = CUDA_SLOTS,
                 device_index: int = 0, slot_count: int = RING_SLOTS) -> None:
        self._opener, self._writer, self._slots = opener, writer, slots
        self._device_index, self._slot_count = device_index, slot_count
        self._parked: Optional[Tuple[str, _Process]] = None

    def __call__(self, spec: SourceSpec, capture: CaptureConfig, packet_sink: Optional[PacketSink] = None) -> Any:
        """``packet_sink``: a recorded camera's; the child tees its demuxer's packets to it."""
        if not capture.nvdec_processes:  # the operator chose threads: decode right here
            self.close()
            tee = {} if packet_sink is None else {"packet_sink": packet_sink}
            return resolve(self._opener)(spec, capture, self._device_index, **tee)
        what = mask_secrets(spec.target)
        child = self._unpark(spec.target)
        if child is None:
            child = self._spawn(spec, capture, what, packet_sink is not None)
        timeout_s = capture.open_timeout_s + SPAWN_ALLOWANCE_S
        try:
            info = self._wait_opened(child, timeout_s, what, packet_sink)
            if child.slots is not None and child.slots.slot_nbytes < _nbytes(info):
                # a reopened file with larger pictures: a new process with slots that fit
                stop(child)
                child = self._spawn(spec, capture, what, packet_sink is not None)
                info = self._wait_opened(child, timeout_s, what, packet_sink)
            if child.slots is None:
                child.slots = resolve(self._slots)(self._device_index, _nbytes(info), child.states)
                child.conn.send((SLOTS, child.slots.handles, child.slots.slot_nbytes))
            else:
                child.conn.send((SLOTS, None, child.slots.slot_nbytes))
        except BaseException:
            stop(child)
            raise
        park = lambda parked: self._park_process(spec.target, parked)  # noqa: E731
        return ProcessSource(child, info, what, capture.stall_timeout_s, park, packet_sink)

    def _spawn(self, spec: SourceSpec, capture: CaptureConfig, what: str, record: bool) -> _Process:
        context = multiprocessing.get_context("spawn")
        parent_conn, child_conn = context.Pipe()
        plan = ChildPlan(spec.target, capture.model_dump(), self._opener, self._writer, self._device_index, record)
        states = SlotStates(self._slot_count, context)
        process = context.Process(target=child_main, args=(child_conn, plan, states), name=f"decode:{what}", daemon=True)
        process.start()
        child_conn.close()
        return _Process(process, parent_conn, states)

    def _unpark(self, target: str) -> Optional[_Process]:
        parked, self._parked = self._parked, None
        if parked is None:
            return None
        parked_target, child = parked
        if parked_target == target and child.process.is_alive():
            try:
                child.conn.send((REOPEN,))
                return child
            except (OSError, ValueError):
                pass
        stop(child)
        return None

    def _park_process(self, target: str, child: _Process) -> None:
        if self._parked is not None:
            stop(self._parked[1])
        self._parked = (target, child)

    @staticmethod
    def _wait_opened(child: _Process, timeout_s: float, what: str, packet_sink: Optional[PacketSink]) -> Dict[str, Any]:
        deadline_s = time.monotonic() + timeout_s
        message: tuple = ()
        while not message or forward(message, packet_sink):  # the stream is announced before its first frame
            if not child.conn.poll(max(0.0, deadline_s - time.monotonic())):
                raise SourceUnavailable(f"the decoder process for {what} did not open it within {timeout_s:g} s")
            try:
                message = child.conn.recv()
            except EOFError:
                raise SourceUnavailable(f"the decoder process for {what} exited while opening it "
                                        f"(code {child.process.exitcode})") from None
        if message[0] == OPENED:
            return message[1]
        kind, text = (message[1], message[2]) if message[0] == ERROR else ("read", f"unexpected message {message[0]!r}")
        if kind == "source":
            raise SourceError(text)
        raise SourceUnavailable(text)

    def close(self) -> None:
        if self._parked is not None:
            stop(self._parked[1])
            self._parked = None
