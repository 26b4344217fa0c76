"""The decoder process's side of ``child_process``: open the source, copy pictures into the slots, announce them.

Runs in a fresh interpreter (``spawn``); ``child_process`` describes the messages on the pipe
and starts it with :func:`child_main`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from edge_app.capture.video_decode.ipc_ring import SlotStates
from edge_app.capture.video_decode.pace import Pace
from edge_app.capture.video_decode.process_packets import PipePacketSink
from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.config.redact import mask_secrets
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import parse_source
from edge_app.process.named_callable import resolve

log = logging.getLogger(__name__)

OPENED, FRAME, END, ERROR = "opened", "frame", "end", "error"
SLOTS, REOPEN, STOP, PACE = "slots", "reopen", "stop", "pace"
#: the longest a file's child sleeps for a slot before it looks at the pipe (a stop, a new pace);
#: a slot given back wakes it at once
SLOT_WAIT_S = 0.05
PARK_TIMEOUT_S = 30.0

NVDEC_OPENER = "edge_app.capture.video_decode.nvdec_source:open_nvdec"
CUDA_WRITER = "edge_app.capture.video_decode.ipc_ring:CudaIpcSlotWriter"


@dataclass(frozen=True)
class ChildPlan:
    """Everything the child needs, picklable: what to open, with what, and how to share frames."""

    target: str
    capture: Dict[str, Any]
    opener: str = NVDEC_OPENER
    writer: str = CUDA_WRITER
    device_index: int = 0
    record: bool = False  # tee the demuxer's packets to the appliance (process_packets)


class _Child:
    def __init__(self, conn: Any, plan: ChildPlan, states: SlotStates) -> None:
        self.conn, self.plan, self.states = conn, plan, states
        self.writer: Any = None
        self.geometry: Optional[Tuple[int, int]] = None
        #: a file's source that ended, kept to start it over (``rewind``) when told to reopen
        self.ended: Any = None
        self.pace = Pace()  # the camera's schedule, from its ``pace`` messages

    def run(self) -> None:
        try:
            while self._serve_once():
                if not self._wait_for_reopen():
                    return
        except (EOFError, BrokenPipeError, ConnectionResetError):
            return  # the parent is gone
        finally:
            self._drop_ended()
            if self.writer is not None:
                self.writer.close()

    def _serve_once(self) -> bool:
        """Open, stream to the end; True when the source ended (may be reopened), else False."""
        source = None
        try:
            source, frame = self._open()
            if frame is None:
                self.conn.send((ERROR, "unavailable", "the source gave no frame"))
                return False
            self.geometry = (frame.width, frame.height)
            self.conn.send((OPENED, {"fps": source.fps, "live": source.live, "width": frame.width, "height": frame.height}))
            self._take_slots()
            dropped = self._stream(source, frame)
            self.conn.send((END, dropped, self.pace.skipped))
            if not source.live and callable(getattr(source, "rewind", None)):  # a file, to start over
                self.ended, source = source, None
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

    def _open(self) -> Tuple[Any, Any]:
        """The source and its first frame: the ended one started over where it can be, else opened."""
        source, self.ended = self.ended, None
        if source is not None:
            try:
                if source.rewind():
                    frame = source.read()
                    if frame is not None:
                        return source, frame
            except Exception as err:  # the file changed or went: open it as if for the first time
                log.debug("could not start %s over with the same decoder: %s", mask_secrets(self.plan.target), err)
            source.release()
        tee = {"packet_sink": PipePacketSink(self.conn)} if self.plan.record else {}
        source = resolve(self.plan.opener)(parse_source(self.plan.target), CaptureConfig(**self.plan.capture),
                                           self.plan.device_index, **tee)
        try:
            return source, source.read()
        except BaseException:
            source.release()
            raise

    def _drop_ended(self) -> None:
        source, self.ended = self.ended, None
        if source is not None:
            source.release()

    def _take_slots(self) -> None:
        """Wait for the parent's answer to ``opened``: new slots to map, or keep the old ones."""
        message = self.conn.recv()
        while message[0] == PACE:
            self.pace = self.pace.with_interval(message[1])
            message = self.conn.recv()
        if message[0] == STOP:
            raise _Stopped()
        _, handles, slot_nbytes = message
        if handles is not None:
            if self.writer is not None:
                self.writer.close()
                self.writer = None
            self.writer = resolve(self.plan.writer)(self.plan.device_index, handles, slot_nbytes)

    def _stream(self, source: Any, frame: Any) -> int:
        """Hand frames over until the source ends; the pictures dropped on the way."""
        dropped = 0
        self.pace = self.pace.new_pass()  # a file's stream time starts again; each pass counts its own
        while frame is not None:
            if (frame.width, frame.height) != self.geometry:
                raise SourceError(f"the picture size changed from {self.geometry} to {(frame.width, frame.height)}")
            slot = self.states.take_free()
            while slot is None and not source.live:  # a file: wait for the appliance, lose nothing
                self.states.wait_freed(SLOT_WAIT_S)
                self._check_stop(0.0)
                slot = self.states.take_free()
            if slot is None:
                dropped += 1  # a live stream: keep up with it, this picture is lost
            else:
                try:
                    self.writer.put(slot, frame)
                except BaseException:
                    self.states.release(slot)
                    raise
                self.conn.send((FRAME, slot, frame.width, frame.height, dropped, self.pace.skipped))
            self._check_stop(0.0)
            frame = self.pace.next_kept(source)
        return dropped

    def _check_stop(self, timeout_s: float) -> None:
        while self.conn.poll(timeout_s):
            message = self.conn.recv()
            if message[0] == STOP:
                raise _Stopped()
            if message[0] == PACE:
                self.pace = self.pace.with_interval(message[1])
            timeout_s = 0.0

    def _wait_for_reopen(self) -> bool:
        while self.conn.poll(PARK_TIMEOUT_S):
            message = self.conn.recv()
            if message[0] == REOPEN:
                return True
            if message[0] == STOP:
                return False
        return False


class _Stopped(Exception):
    pass


def child_main(conn: Any, plan: ChildPlan, states: SlotStates) -> None:
    """The decoder process's entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s decode: %(message)s")
    _Child(conn, plan, states).run()
