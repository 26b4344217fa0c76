"""``CameraWorker``: one camera, one capture thread, reconnects and a stall watchdog.

Threads
    ``capture:<camera_id>`` opens the source, reads frames and hands them to a ``FrameSlot``; on a
    failure it goes to ``reconnecting``, sleeps the backoff delay (cut short by ``stop``) and
    reopens. ``capture-watchdog:<camera_id>`` only watches the clock, and abandons a capture
    thread stuck in a backend call (why: ``edge_app.capture.watchdog``). The capture thread's loop
    (open, read, hand over, end of file) is ``edge_app.capture.camera_loop``.

Nothing here is shared between cameras, so one camera failing never affects another.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Optional

from edge_app.capture.buffer import BufferPolicy, FrameSlot, policy_for
from edge_app.capture.camera_loop import CaptureLoop
from edge_app.capture.counters import CaptureCounters
from edge_app.capture.video_decode.decoders import CameraOpener, Opener, default_openers
from edge_app.capture.early_drop import EarlyDrop, capture_fps_limit
from edge_app.capture.frame import Frame
from edge_app.capture.frame_gate import FrameAdmission, FrameGate
from edge_app.capture.packet_tee import PacketTee
from edge_app.capture.packets import PacketSink
from edge_app.capture.sources import SourceError, SourceSpec
from edge_app.capture.state import StateMachine, StreamState
from edge_app.capture.watchdog import BackendCall, BackendCalls, watch
from edge_app.config.schema import CaptureConfig
from edge_app.config.schema_cameras import CameraConfig
from edge_app.config.source_spec import parse_source
from edge_app.config.redact import mask_secrets

logger = logging.getLogger(__name__)

StateCallback = Callable[[str, StreamState, Optional[str]], None]


class CameraWorker(CaptureLoop):
    """Captures one camera on its own thread and keeps its newest frame for the pipeline.

    ``on_state(camera_id, state, error)`` is called on every state change, in order, from the
    thread that caused it (capture, watchdog, or the caller of ``start``/``stop``) while the
    worker's lock is held: keep it quick and do not wait there for another thread that uses this
    worker. ``on_frame()`` is a wake-up hook called after each new frame, outside any lock.
    ``packet_sink`` receives the camera's compressed packets (``edge_app.capture.packet_tee``).
    """

    def __init__(
        self,
        config: CameraConfig,
        capture: Optional[CaptureConfig] = None,
        on_state: Optional[StateCallback] = None,
        on_frame: Optional[Callable[[], None]] = None,
        clock: Any = time,
        opener: Optional[Opener] = None,
        packet_sink: Optional[PacketSink] = None,
    ) -> None:
        self.config = config
        self.camera_id = config.id
        self.capture_config = capture or CaptureConfig()
        self._on_state = on_state
        self._on_frame = on_frame
        self._clock = clock
        # opener(..., packet_sink=) only for a recorded camera: packets from the frames' demuxer
        self._packets = PacketTee(config.id, packet_sink) if packet_sink is not None else None
        self._spec: Optional[SourceSpec] = None
        self._spec_error: Optional[str] = None
        try:
            self._spec = parse_source(config.source)
        except SourceError as exc:
            self._spec_error = str(exc)
        live = self._spec.live if self._spec is not None else True
        self.policy: BufferPolicy = policy_for(live, config.realtime)
        # Without an opener, cameras[].decoder picks one; fps_limit reaches decoders that drop inside
        drop_fps = capture_fps_limit(self.policy, config.fps_limit)
        self._opener = opener if opener is not None else CameraOpener(config.decoder, default_openers(drop_fps))
        self._slot = FrameSlot(self.policy)
        self._machine = StateMachine()
        self._lock = threading.RLock()
        self._stop_event = threading.Event()
        self._started = False
        self._generation = 0
        self._thread: Optional[threading.Thread] = None
        self._watchdog: Optional[threading.Thread] = None
        self._calls = BackendCalls(self.capture_config)
        self._counts = CaptureCounters()
        self._last_error: Optional[str] = None
        self._frame_hook_failed = False
        self._gate = FrameGate(config.id, EarlyDrop(drop_fps) if self.policy is BufferPolicy.DROP_OLDEST else None)

    # ----------------------------------------------------------------- public API

    @property
    def state(self) -> StreamState:
        return self._machine.state

    @property
    def last_error(self) -> Optional[str]:
        return self._last_error

    @property
    def waits_for_consumer(self) -> bool:
        """True for the WAIT policy (files with ``realtime: false``): no frame is ever dropped, so a
        consumer holding a frame back should not take the next one yet."""
        return self.policy is BufferPolicy.WAIT

    @property
    def source_masked(self) -> str:
        return mask_secrets(self.config.source)

    def start(self) -> None:
        """Start capturing (``connecting``). A worker runs once; create a new one to restart."""
        with self._lock:
            if self._started:
                raise RuntimeError(f"camera {self.camera_id} was already started; create a new worker")
            self._started = True
            self._set_state(self._generation, StreamState.CONNECTING, None)
            self._spawn_capture()
            self._watchdog = threading.Thread(
                target=watch, args=(self.camera_id, self.capture_config.stall_timeout_s, self._stop_event,
                                    lambda: self._check_watchdog(self._clock.monotonic())),
                name=f"capture-watchdog:{self.camera_id}", daemon=True)
            self._watchdog.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop capturing; returns within ``timeout_s`` even if a backend call is blocking.

        The state becomes ``stopped`` (a camera in ``error`` keeps its error). A capture thread
        still stuck in a backend call is left behind as a daemon and exits when the call returns.
        """
        deadline_s = time.monotonic() + timeout_s
        self._stop_event.set()
        self._slot.close()
        with self._lock:
            thread, watchdog = self._thread, self._watchdog
        for worker_thread in (thread, watchdog):
            if worker_thread is not None and worker_thread is not threading.current_thread():
                worker_thread.join(max(0.0, deadline_s - time.monotonic()))
        if thread is not None and thread.is_alive():
            logger.warning("camera %s: capture thread still blocked in the video backend; leaving it behind",
                           self.camera_id)
        else:  # only the capture thread opens sources: with it gone, nothing races the close
            getattr(self._opener, "close", lambda: None)()
        self._close_packets("camera stopped")
        with self._lock:
            self._generation += 1  # whatever still runs is stale from now on
            self._calls.current = None
            if self._machine.state not in (StreamState.STOPPED, StreamState.ERROR):
                self._set_state(self._generation, StreamState.STOPPED, None)

    def use_motion(self, admission: Optional[FrameAdmission]) -> None:
        """Gate this camera's frames from now on (None: every frame goes to the pipeline)."""
        with self._lock:
            self._gate.use(admission)

    @property
    def motion_report(self) -> Any:
        return self._gate.report()

    @property
    def newest_held_back(self) -> bool:
        """Whether the newest frame was held back by the motion gate (live view shows it unanalysed)."""
        return self._gate.newest_held_back

    def take(self) -> Optional[Frame]:
        """The newest unconsumed frame, or None; never blocks (releases a waiting file reader)."""
        return self._slot.take()

    def peek(self) -> Optional[Frame]:
        """The newest frame, consumed or not, without consuming it (snapshots)."""
        return self._slot.peek()

    def wait_newer(self, after_frame_id: int, timeout_s: float) -> Optional[Frame]:
        """Block until a frame other than ``after_frame_id`` has arrived (live view), or timeout."""
        return self._slot.wait_newer(after_frame_id, timeout_s)

    def stats(self) -> Dict[str, Any]:
        """state, fps (sliding window), frames_captured, frames_dropped, reconnects, last_error, motion."""
        with self._lock:
            return {
                "state": self._machine.state.value,
                "fps": round(self._counts.meter.rate(self._clock.monotonic()), 2),
                "frames_captured": self._counts.frames_captured,
                "frames_dropped": self._slot.dropped + self._counts.dropped_by_sources() + self._gate.dropped_early,
                "reconnects": self._counts.reconnects,
                "last_error": self._last_error,
                "motion": self.motion_report,
            }

    # ------------------------------------------------------------ state and threads

    def _set_state(self, generation: int, new: StreamState, error: Optional[str]) -> bool:
        """Move to ``new`` if ``generation`` is still current; notify on a real change."""
        with self._lock:
            if generation != self._generation:
                return False
            if error is not None:
                # Backend messages may quote the source URL: the error goes to MQTT and the API.
                error = mask_secrets(error)
                self._last_error = error
            old = self._machine.state
            if not self._machine.transition(new, error):
                return False
            level = logging.WARNING if new in (StreamState.RECONNECTING, StreamState.ERROR) else logging.INFO
            logger.log(level, "camera %s: %s -> %s%s", self.camera_id, old.value, new.value,
                       f" ({error})" if error else "")
            if self._on_state is not None:
                try:
                    self._on_state(self.camera_id, new, error)
                except Exception:  # a broken listener must not kill capture
                    logger.exception("camera %s: state listener failed", self.camera_id)
            return True

    def _spawn_capture(self) -> None:
        with self._lock:
            generation = self._generation
            self._thread = threading.Thread(
                target=self._run, args=(generation,), name=f"capture:{self.camera_id}", daemon=True)
            self._thread.start()

    def _active(self, generation: int) -> bool:
        return not self._stop_event.is_set() and generation == self._generation

    def _fail(self, generation: int, message: str) -> None:
        """A recoverable failure: count it and go to ``reconnecting``; the loop backs off."""
        with self._lock:
            if not self._active(generation):
                return
            self._count_failure()
            if self._machine.state is StreamState.RECONNECTING:
                logger.debug("camera %s: still failing: %s", self.camera_id, message)
            self._set_state(generation, StreamState.RECONNECTING, message)

    def _count_failure(self) -> None:
        with self._lock:
            self._counts.failure(self._clock.monotonic())

    def _reconnect_delay_s(self) -> float:
        with self._lock:
            return self._counts.reconnect_delay_s(self._clock.monotonic(), self.capture_config.backoff_initial_s,
                                                  self.capture_config.backoff_max_s)

    def _enter_call(self, generation: int, kind: str) -> None:
        with self._lock:
            if generation == self._generation:
                self._calls.current = BackendCall(generation, kind, self._clock.monotonic())

    def _leave_call(self, generation: int) -> bool:
        """End a backend call; False when this thread was abandoned or the camera is stopping."""
        with self._lock:
            if generation == self._generation:
                self._calls.current = None
            return self._active(generation)

    # ---------------------------------------------------------------------- watchdog

    def _check_watchdog(self, now_mono_s: float) -> None:
        with self._lock:
            if self._stop_event.is_set():
                return
            call = self._calls.stalled(self._generation, now_mono_s)
            if call is not None:
                self._abandon(call, now_mono_s - call.started_mono_s)
            if self._thread is None and self._machine.state is not StreamState.ERROR:
                if self._calls.room_for_another():
                    self._spawn_capture()

    def _abandon(self, call: BackendCall, elapsed_s: float) -> None:
        message = (f"no frame from {self.source_masked} for {elapsed_s:.1f} s "
                   f"(the video backend's {call.kind} never returned); reopening")
        self._calls.abandon(self._thread, f"capture:{self.camera_id}:abandoned")
        self._close_packets(message)
        self._thread = None
        self._count_failure()
        self._generation += 1
        self._set_state(self._generation, StreamState.RECONNECTING, message)
