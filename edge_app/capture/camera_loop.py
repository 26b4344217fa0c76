"""The capture thread of a ``CameraWorker``: open the source, read, hand frames over, reopen.

A part of :class:`edge_app.capture.camera.CameraWorker` (its base class), kept apart so each
module stays readable: the worker owns the state, the lock, the threads and the watchdog; this
is what its ``capture:<camera_id>`` thread runs. Every method takes the connection's
``generation`` and gives up as soon as it is no longer current (stopped, or abandoned by the
watchdog).
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional

from edge_app.capture.buffer import BufferPolicy, FrameSlot, Pacer, file_fps
from edge_app.capture.counters import CaptureCounters
from edge_app.capture.frame import Frame
from edge_app.capture.frame_gate import FrameGate
from edge_app.capture.packet_tee import PacketTee
from edge_app.capture.sources import FrameSource, SourceError, SourceSpec, check_backend
from edge_app.capture.state import StateMachine, StreamState
from edge_app.config.schema import CaptureConfig
from edge_app.config.schema_cameras import CameraConfig

logger = logging.getLogger(__name__)

#: why a connection's packets end (``PacketSink.stream_closed``), by ``_stream``'s outcome
CLOSE_REASONS = {"eof": "end of file", "stopped": "camera stopped"}


class CaptureLoop:
    """The capture thread's side of a camera worker (see the module's docstring)."""

    # Set by CameraWorker.__init__.
    camera_id: str
    config: CameraConfig
    capture_config: CaptureConfig
    policy: BufferPolicy
    source_masked: str
    _clock: Any
    _lock: threading.RLock
    _stop_event: threading.Event
    _generation: int
    _spec: Optional[SourceSpec]
    _spec_error: Optional[str]
    _opener: Any
    _packets: Optional[PacketTee]
    _slot: FrameSlot
    _machine: StateMachine
    _counts: CaptureCounters
    _gate: FrameGate
    _last_error: Optional[str]
    _on_frame: Optional[Callable[[], None]]
    _frame_hook_failed: bool

    # What CameraWorker provides.
    def _set_state(self, generation: int, new: StreamState, error: Optional[str]) -> bool:
        raise NotImplementedError

    def _active(self, generation: int) -> bool:
        raise NotImplementedError

    def _fail(self, generation: int, message: str) -> None:
        raise NotImplementedError

    def _reconnect_delay_s(self) -> float:
        raise NotImplementedError

    def _enter_call(self, generation: int, kind: str) -> None:
        raise NotImplementedError

    def _leave_call(self, generation: int) -> bool:
        raise NotImplementedError

    def _run(self, generation: int) -> None:
        try:
            self._loop(generation)
        except Exception as exc:  # a bug: make it visible on this camera only
            logger.exception("camera %s: capture loop crashed", self.camera_id)
            self._set_state(generation, StreamState.ERROR, f"internal error: {exc}")

    def _loop(self, generation: int) -> None:
        spec = self._spec
        try:
            if spec is None:
                raise SourceError(self._spec_error or "invalid source")
            getattr(self._opener, "check", check_backend)(spec)
        except SourceError as exc:
            self._set_state(generation, StreamState.ERROR, str(exc))
            return
        while self._active(generation):
            delay_s = self._reconnect_delay_s()
            if delay_s > 0 and self._stop_event.wait(delay_s):
                return
            if not self._active(generation):
                return
            source = self._open(generation, spec)
            if source is None:
                continue
            with self._lock:
                self._counts.source = source
            outcome = "failed"
            try:
                outcome = self._stream(generation, spec, source)
            finally:
                self._close_packets(CLOSE_REASONS.get(outcome, self._last_error or "reading failed"))
                source.release()
                with self._lock:
                    self._counts.source_closed()
            if outcome == "eof":
                self._end_of_file(generation)
                if not self.config.loop:
                    return

    def _open(self, generation: int, spec: SourceSpec) -> Optional[FrameSource]:
        self._enter_call(generation, "open")
        try:
            tee = {} if self._packets is None else {"packet_sink": self._packets.lease()}
            source = self._opener(spec, self.capture_config, **tee)
        except SourceError as exc:
            self._leave_call(generation)
            self._set_state(generation, StreamState.ERROR, str(exc))
            with self._lock:
                if generation == self._generation:
                    self._generation += 1  # permanent: stop this loop for good
            return None
        except Exception as exc:
            self._leave_call(generation)
            self._fail(generation, str(exc) or f"cannot open {self.source_masked}")
            return None
        if not self._leave_call(generation):
            source.release()
            return None
        logger.debug("camera %s: opened %s", self.camera_id, self.source_masked)
        return source

    def _stream(self, generation: int, spec: SourceSpec, source: FrameSource) -> str:
        """Read until failure, end of file or stop: returns "failed", "eof" or "stopped"."""
        pacer = None
        if not spec.live and self.config.realtime:
            pacer = Pacer(file_fps(source.fps), self._clock.monotonic, self._stop_event.wait)
        delivered = 0
        while self._active(generation):
            if pacer is not None and not pacer.wait_turn():
                return "stopped"
            skip = self._gate.skips_from(source, self._clock.monotonic())
            # Grabbed only: decoded (the next frames need it) but never converted or copied out.
            grab = getattr(source, "grab", None) if skip else None
            self._enter_call(generation, "read")
            try:
                image = source.read() if grab is None else (True if grab() else None)
            except Exception as exc:  # e.g. cv2.error from a backend: reopen like any read failure
                self._leave_call(generation)
                self._fail(generation, f"reading {self.source_masked} failed: {exc}")
                return "failed"
            if not self._leave_call(generation):
                return "stopped"
            skipped = getattr(source, "take_skipped", int)()  # dropped by the source on its schedule
            for _ in range(skipped):
                self._skip(generation)
            if pacer is not None:
                pacer.skip(skipped)
            if image is None:
                if not spec.live and delivered > 0:
                    return "eof"
                what = "the file has no readable frames" if not spec.live else (
                    f"the stream ended or sent nothing for {self.capture_config.stall_timeout_s:g} s")
                self._fail(generation, f"no frame from {self.source_masked}: {what}")
                return "failed"
            delivered += 1
            if skip:
                self._skip(generation)
                continue
            if not self._deliver(generation, image):
                return "stopped"
        return "stopped"

    def _deliver(self, generation: int, image: Any) -> bool:
        with self._lock:
            if not self._active(generation):
                return False
            frame = Frame(self.camera_id, self._counts.frames_captured + 1, self._clock.time(), self._clock.monotonic(),
                          image)
            self._counts.frame(frame.mono_ts)
            if self._machine.state is not StreamState.STREAMING:
                self._set_state(generation, StreamState.STREAMING, None)
        if not self._gate.admits(frame):
            self._slot.show(frame)
            return True
        if not self._slot.put(frame):  # WAIT policy blocks here until the consumer takes
            return False
        if self._on_frame is not None:
            try:
                self._on_frame()
            except Exception:
                if not self._frame_hook_failed:
                    self._frame_hook_failed = True
                    logger.exception("camera %s: frame hook failed", self.camera_id)
        return True

    def _skip(self, generation: int) -> None:
        """A frame dropped before it cost anything: it still counts (frame ids show the gap)."""
        with self._lock:
            if self._active(generation):
                self._counts.frame(self._clock.monotonic())
                self._gate.dropped_early += 1

    def _close_packets(self, reason: str) -> None:
        if self._packets is not None:
            self._packets.close(reason)

    def _end_of_file(self, generation: int) -> None:
        if self.config.loop:
            logger.debug("camera %s: end of file, starting again", self.camera_id)
            return
        if self.policy is BufferPolicy.WAIT:
            # "stopped" should mean every frame was handed over, not just read.
            while self._active(generation) and not self._slot.wait_drained(0.5):
                pass
        self._set_state(generation, StreamState.STOPPED, None)
