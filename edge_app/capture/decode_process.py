"""Decoding a camera in a child process, frames handed over in GPU memory.

Decoders in threads of one process take turns on Python's interpreter lock: on an H200, eight
NVDEC decoders in threads gave 513 frames/s in all at Python's default switch interval and
1817 at the appliance's 0.5 ms, eight in processes 2793-3141. Each ``decoder: nvdec`` camera
therefore decodes in its own process by default (as Frigate runs FFmpeg in one per camera),
which also keeps a decoder that crashes from taking the appliance with it.

The child opens the source with the in-process opener (``nvdec_source.open_nvdec``) and copies
each picture into one of a few slots of device memory that it exported with CUDA IPC. It then
sends the slot's number over a pipe. The parent copies the slot into a frame of its own pool
(device to device, so the picture never reaches the host), hands the slot back, and returns the
frame: frames outlive the child, and the child never waits on the pipeline for more than its
slots. A file's child waits for a free slot (no frame is lost); a live stream's child keeps
reading and drops a picture when every slot is taken, counted.

Messages (pickled tuples on a ``multiprocessing`` pipe), child to parent: ``("opened", info)``,
``("frame", slot, width, height, dropped)``, ``("end", dropped)``, ``("error", kind, text)``; parent
to child: ``("free", slot)``, ``("reopen",)``, ``("stop",)``. At the end of a file the child
waits to be told to start again (``loop: true`` reopens through the same process, without a new
one and a new CUDA context every pass) or to stop; unused for ``PARK_TIMEOUT_S``, it exits.

``capture.nvdec_processes: false`` decodes in the camera's thread instead (less CPU and GPU
memory: each process has its own CUDA context).

What opens the source in the child and how slots are shared are named as ``module:attribute``
strings, since the child is a fresh interpreter (``spawn``: CUDA does not survive ``fork``).
"""
from __future__ import annotations

import logging
import multiprocessing
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.config.schema import CaptureConfig
from edge_app.config.sources import SourceSpec, parse_source
from edge_app.named_callable import resolve
from edge_app.redact import mask_secrets

log = logging.getLogger(__name__)

OPENED, FRAME, END, ERROR = "opened", "frame", "end", "error"
FREE, REOPEN, STOP = "free", "reopen", "stop"
RING_SLOTS = 4
PARK_TIMEOUT_S = 30.0
#: starting an interpreter and importing the decoder, on top of the source's own open timeout
SPAWN_ALLOWANCE_S = 30.0

NVDEC_OPENER = "edge_app.capture.nvdec_source:open_nvdec"
CUDA_RING = "edge_app.capture.ipc_ring:CudaIpcRing"
CUDA_RECEIVER = "edge_app.capture.ipc_ring:CudaIpcReceiver"


@dataclass(frozen=True)
class ChildPlan:
    """Everything the child needs, picklable: what to open, with what, and how to share frames."""

    target: str
    capture: Dict[str, Any]
    opener: str = NVDEC_OPENER
    ring: str = CUDA_RING
    device_index: int = 0
    slots: int = RING_SLOTS


# -- the child ----------------------------------------------------------------------------------
class _Child:
    def __init__(self, conn: Any, plan: ChildPlan) -> None:
        self.conn, self.plan = conn, plan
        self.ring: Any = None
        self.geometry: Optional[Tuple[int, int]] = None
        self.free: List[int] = []

    def run(self) -> None:
        try:
            while self._serve_once():
                if not self._wait_for_reopen():
                    return
        except (EOFError, BrokenPipeError, ConnectionResetError):
            return  # the parent is gone
        finally:
            if self.ring is not None:
                self.ring.close()

    def _serve_once(self) -> bool:
        """Open, stream to the end; True when the source ended (may be reopened), else False."""
        source = None
        try:
            spec = parse_source(self.plan.target)
            source = resolve(self.plan.opener)(spec, CaptureConfig(**self.plan.capture), self.plan.device_index)
            frame = source.read()
            if frame is None:
                self.conn.send((ERROR, "unavailable", "the source gave no frame"))
                return False
            self._ensure_ring(frame.width, frame.height)
            self.conn.send((OPENED, {"fps": source.fps, "live": source.live, "handles": self.ring.handles}))
            self.conn.send((END, self._stream(source, frame)))
            return True
        except SourceError as err:
            self.conn.send((ERROR, "source", str(err)))
        except SourceUnavailable as err:
            self.conn.send((ERROR, "unavailable", str(err)))
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise
        except _Stopped:
            pass
        except Exception as err:  # reported to the camera, which reconnects
            self.conn.send((ERROR, "read", f"{type(err).__name__}: {err}"))
        finally:
            if source is not None:
                source.release()
        return False

    def _ensure_ring(self, width: int, height: int) -> None:
        if self.ring is not None and self.geometry == (width, height):
            return
        if self.ring is not None:
            self.ring.close()
        self.ring = resolve(self.plan.ring)(self.plan.device_index, width * height * 3 // 2, self.plan.slots)
        self.geometry = (width, height)
        self.free = list(range(self.plan.slots))

    def _stream(self, source: Any, frame: Any) -> int:
        """Hand frames over until the source ends; the pictures dropped on the way."""
        dropped = 0
        while frame is not None:
            self._handle_messages(block=not self.free and not source.live)
            if not self.free:
                dropped += 1  # a live stream: keep up with it, this picture is lost
            else:
                if (frame.width, frame.height) != self.geometry:
                    raise SourceError(f"the picture size changed from {self.geometry} to {(frame.width, frame.height)}")
                slot = self.free.pop(0)
                self.ring.put(slot, frame)
                self.conn.send((FRAME, slot, frame.width, frame.height, dropped))
            frame = source.read()
        return dropped

    def _handle_messages(self, block: bool) -> None:
        while block or self.conn.poll():
            message = self.conn.recv()
            if message[0] == FREE:
                self.free.append(int(message[1]))
                block = False
            elif message[0] == STOP:
                raise _Stopped()

    def _wait_for_reopen(self) -> bool:
        while self.conn.poll(PARK_TIMEOUT_S):
            message = self.conn.recv()
            if message[0] == FREE:
                self.free.append(int(message[1]))
            elif message[0] == REOPEN:
                return True
            elif message[0] == STOP:
                return False
        return False


class _Stopped(Exception):
    pass


def child_main(conn: Any, plan: ChildPlan) -> None:
    """The decoder process's entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s decode: %(message)s")
    _Child(conn, plan).run()


# -- the parent ---------------------------------------------------------------------------------
@dataclass
class _Process:
    process: Any
    conn: Any
    receiver: Any = None
    handles: Tuple[bytes, ...] = ()


class ProcessSource:
    """A FrameSource whose frames come from a decoder process (see the module's docstring)."""

    def __init__(self, child: _Process, info: Dict[str, Any], what: str, stall_timeout_s: float,
                 park: Callable[[_Process], None]) -> None:
        self._child, self._what, self._stall_timeout_s, self._park = child, what, stall_timeout_s, park
        self.live = bool(info["live"])
        self.fps = float(info["fps"] or 0.0)
        self.dropped = 0
        self._ended = False

    def read(self) -> Any:
        child = self._child
        if child is None or self._ended:
            return None
        if not child.conn.poll(self._stall_timeout_s):
            return None  # stalled: the camera reconnects, which replaces the process
        try:
            message = child.conn.recv()
        except (EOFError, OSError):
            child.process.join(1.0)
            raise RuntimeError(f"the decoder process for {self._what} exited (code {child.process.exitcode})") from None
        if message[0] == FRAME:
            _, slot, width, height, self.dropped = message
            try:
                return child.receiver.take(int(slot), int(width), int(height))
            finally:
                try:
                    child.conn.send((FREE, slot))
                except OSError:
                    pass  # the process is gone: the next read says so
        if message[0] == END:
            self._ended, self.dropped = True, int(message[1])
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
    if child.receiver is not None:
        child.receiver.close()
    child.conn.close()


class DecodeProcessOpener:
    """Opens a camera's source in a decoder process; keeps the process of a file that ended.

    One per camera (each ``CameraOpener`` makes its own), so a parked process is only ever
    reused for the same camera.
    """

    def __init__(self, opener: str = NVDEC_OPENER, ring: str = CUDA_RING, receiver: str = CUDA_RECEIVER,
                 device_index: int = 0, slots: int = RING_SLOTS) -> None:
        self._opener, self._ring, self._receiver = opener, ring, receiver
        self._device_index, self._slots = device_index, slots
        self._parked: Optional[Tuple[str, _Process]] = None

    def __call__(self, spec: SourceSpec, capture: CaptureConfig) -> Any:
        if not capture.nvdec_processes:  # the operator chose threads: decode right here
            self.close()
            return resolve(self._opener)(spec, capture, self._device_index)
        what = mask_secrets(spec.target)
        child = self._unpark(spec.target)
        if child is None:
            child = self._spawn(spec, capture, what)
        try:
            info = self._wait_opened(child, capture.open_timeout_s + SPAWN_ALLOWANCE_S, what)
            handles = tuple(info["handles"])
            if child.receiver is None or child.handles != handles:
                if child.receiver is not None:
                    child.receiver.close()
                child.receiver = resolve(self._receiver)(self._device_index, handles)
                child.handles = handles
        except BaseException:
            stop(child)
            raise
        park = lambda parked: self._park_process(spec.target, parked)  # noqa: E731
        return ProcessSource(child, info, what, capture.stall_timeout_s, park)

    def _spawn(self, spec: SourceSpec, capture: CaptureConfig, what: str) -> _Process:
        context = multiprocessing.get_context("spawn")
        parent_conn, child_conn = context.Pipe()
        plan = ChildPlan(spec.target, capture.model_dump(), self._opener, self._ring, self._device_index, self._slots)
        process = context.Process(target=child_main, args=(child_conn, plan), name=f"decode:{what}", daemon=True)
        process.start()
        child_conn.close()
        return _Process(process, parent_conn)

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
    def _wait_opened(child: _Process, timeout_s: float, what: str) -> Dict[str, Any]:
        if not child.conn.poll(timeout_s):
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
