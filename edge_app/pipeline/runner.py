"""The analysis pipeline: gather frames -> preprocess -> infer -> decode and publish.

For an accelerator (TensorRT, CUDA) three threads joined by queues overlap the stages: while
batch k runs in the model, batch k+1 is gathered and preprocessed and batch k-1 is decoded,
published and stored (DeepStream keeps its model busy the same way). How many batches may be
under way at once is the detector's to say (``max_batches_in_flight``, the number of buffers
it rotates); a deeper pipeline would only hold frames that grow stale behind a slow model.

After decoding, the publish thread hands each frame to its camera's lane
(``edge_app.pipeline.lanes``): the cameras' tracking, events and MQTT messages run side by side,
each camera's in order.

When the model itself runs on the host CPU, its threads already use every core, and overlapped
stages only preempt them (measured: same throughput, three times the latency). The gather
thread then runs all stages of a batch itself.
"""
from __future__ import annotations

import functools
import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Protocol, Tuple

from edge_app.capture.frame import Frame
from edge_app.capture.rate import RateMeter
from edge_app.detect.base import Detector, PreparedBatch
from edge_app.detect.detections import Detections
from edge_app.pipeline.inflight import InFlight
from edge_app.pipeline.lanes import CameraLanes
from edge_app.pipeline.errorlog import RateLimitedErrorLog
from edge_app.pipeline.stall_watch import ActivityTracker, PipelineActivity
from edge_app.pipeline.scheduler import BatchScheduler

log = logging.getLogger(__name__)
_STOP = object()


def default_lanes() -> int:
    """Result lanes for an accelerator's pipeline: half the cores, 1 to 4 (more only contend for the interpreter lock)."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


class CameraFeed(Protocol):
    """What the pipeline needs of a camera (edge_app.capture.camera.CameraWorker)."""

    def take(self): ...

    @property
    def waits_for_consumer(self) -> bool: ...


class ResultSink(Protocol):
    def handle(self, frame: Frame, detections: Detections, timings_ms: Dict[str, float]) -> None:
        ...

    def count_stale(self, camera_id: str) -> None:
        ...


@dataclass
class _Batch:
    frames: List[Frame]
    prepared: PreparedBatch
    detector: Detector
    prep_ms: float
    # per frame: (capture hand-off, batching wait) in ms
    waits_ms: List[Tuple[float, float]] = field(default_factory=list)
    outputs: Optional[list] = None
    infer_ms: float = 0.0


class Pipeline:
    """Runs detection over every camera's newest frames, batching up to ``max_batch``."""

    def __init__(
        self,
        detector_getter: Callable[[], Detector],
        sources_getter: Callable[[], Mapping[str, CameraFeed]],
        sink: ResultSink,
        scheduler: BatchScheduler,
        clock: Callable[[], float] = time.monotonic,
        name: str = "pipeline",
        lanes: Optional[int] = None,
    ):
        self._detector_getter = detector_getter
        self._sources_getter = sources_getter
        self._sink = sink
        self._scheduler = scheduler
        self._clock = clock
        self._name = name  # thread names: <name>:gather, <name>:infer, <name>:publish
        self._batch_rate = RateMeter()
        self._wake = threading.Event()
        self._stop = threading.Event()
        # Unbounded: InFlight bounds what is in them.
        self._to_infer: "queue.Queue" = queue.Queue()
        self._to_post: "queue.Queue" = queue.Queue()
        self._in_flight = InFlight()
        self._pending: Dict[str, Frame] = {}
        self._pending_since_s: Dict[str, float] = {}
        self._threads: List[threading.Thread] = []
        self._running = False
        self._errors = RateLimitedErrorLog(log)
        self._activity = ActivityTracker()
        self._lane_count = default_lanes() if lanes is None else lanes
        self._lanes: Optional[CameraLanes] = None  # while started: results of an accelerator's batches

    @property
    def errors(self) -> int:
        """Failures in any stage since the start (each one also counts as work not done)."""
        return self._errors.total

    def activity(self) -> PipelineActivity:
        """For ``edge_app.pipeline.stall_watch.assess``."""
        gather = next((t for t in self._threads if t.name == f"{self._name}:gather"), None)
        return self._activity.snapshot(self._running, gather is not None and gather.is_alive())

    def _failed(self, kind: str, message: str, *args: object) -> None:
        self._errors.exception(kind, message, *args)
        # The exception's type only: the stall reason is shown by /readyz, which answers without
        # a token, and the traceback with the message is in the log.
        exc = sys.exc_info()[1]
        what = self._errors.last_message or kind
        if exc is not None:
            what = f"{what} ({type(exc).__name__})"
        self._activity.failed(self._clock(), what)

    # -- wiring ---------------------------------------------------------------------------------
    def notify_frame(self) -> None:
        """Called by capture threads when a frame arrives; never blocks them."""
        self._wake.set()

    def reconfigure(self, fps_limits: Mapping[str, float], max_batch: int, batch_timeout_s: float) -> None:
        self._scheduler.max_batch = max_batch
        self._scheduler.batch_timeout_s = batch_timeout_s
        self._scheduler.set_cameras(fps_limits)
        self._wake.set()

    def wait_drained(self, detector: Detector, timeout_s: float) -> bool:
        """Wait until no batch prepared by ``detector`` is still in flight (before closing it)."""
        return self._in_flight.wait_drained(detector, timeout_s)

    def start(self) -> None:
        self._running = True
        self._lanes = CameraLanes(self._lane_count, self._name, on_error=self._lane_failed)
        for name, target in (("gather", self._gather_loop), ("infer", self._infer_loop), ("publish", self._post_loop)):
            thread = threading.Thread(target=target, name=f"{self._name}:{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 3.0) -> None:
        self._running = False
        self._stop.set()
        self._wake.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads = []
        if self._lanes is not None:  # after the publish thread: nothing more is submitted
            self._lanes.stop(max(0.1, deadline - time.monotonic()))
            self._lanes = None

    # -- stage 1: gather and preprocess ----------------------------------------------------------
    def _collect(self, sources: Mapping[str, CameraFeed]) -> None:
        now_s = self._clock()
        for cid in list(self._pending):
            if cid not in sources:
                self._pending.pop(cid, None)
                self._pending_since_s.pop(cid, None)
        for cid, source in sources.items():
            # A file read with realtime=false waits for us to take its frame; taking another
            # while one is pending would make it read ahead and lose frames.
            if cid in self._pending and source.waits_for_consumer:
                continue
            frame = source.take()
            if frame is None:
                continue
            if cid in self._pending:
                self._sink.count_stale(cid)
            else:
                self._pending_since_s[cid] = now_s
            self._pending[cid] = frame

    def _gather_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._gather_once()
            except Exception:
                # A bug in collecting or planning must not end the thread silently: log it
                # (rate-limited), count it as a failure the health check sees, and go on.
                self._failed("gather", "the pipeline's gather step failed")
                self._stop.wait(0.1)

    def _gather_once(self) -> None:
        detector = self._detector_getter()
        # Room in the pipeline first, frames second: frames chosen before there is room would
        # wait with the batch (growing stale, while a live camera already has a newer one), and
        # the cameras that deliver during the wait would make a batch of their own.
        if not self._in_flight.acquire(detector.max_batches_in_flight, self._stop, owner=detector):
            return
        try:
            frames, waits_ms = self._take_batch()
        except BaseException:
            self._in_flight.release(detector)
            raise
        if not frames:
            self._in_flight.release(detector)
            return
        start_s = time.perf_counter()
        try:
            prepared = detector.preprocess([f.image for f in frames])
        except Exception:  # one bad frame must not stop the appliance
            self._in_flight.release(detector)
            self._failed("preprocess", "preprocessing failed for cameras %s", ", ".join(f.camera_id for f in frames))
            return
        batch = _Batch(frames, prepared, detector, (time.perf_counter() - start_s) * 1000.0, waits_ms)
        if detector.runs_on_host_cpu:
            if self._infer(batch):
                self._post(batch)
        else:
            self._to_infer.put(batch)

    def _take_batch(self) -> Tuple[List[Frame], List[Tuple[float, float]]]:
        """The frames the scheduler batches now, or none (after waiting as long as it says),
        with each frame's (capture hand-off, batching wait) in ms."""
        self._wake.clear()
        self._collect(self._sources_getter())
        now_s = self._clock()
        plan = self._scheduler.plan(self._pending_since_s, now_s)
        if not plan.take:
            self._wake.wait(0.5 if plan.wait_s is None else max(plan.wait_s, 0.0005))
            return [], []
        frames = [self._pending.pop(cid) for cid in plan.take]
        waits_ms = []
        for frame in frames:
            # A newer frame may have replaced the one collected first: its hand-off is then 0.
            collected_s = self._pending_since_s.pop(frame.camera_id, now_s)
            waits_ms.append((max(0.0, collected_s - frame.mono_ts) * 1000.0, max(0.0, now_s - collected_s) * 1000.0))
        self._scheduler.mark_analysed(plan.take, self._clock())
        self._activity.work_taken(self._clock())
        return frames, waits_ms

    def _get(self, q: "queue.Queue"):
        while not self._stop.is_set():
            try:
                return q.get(timeout=0.1)
            except queue.Empty:
                continue
        return _STOP

    # -- stage 2: the model ----------------------------------------------------------------------
    def _infer_loop(self) -> None:
        while True:
            batch = self._get(self._to_infer)
            if batch is _STOP:
                return
            if self._infer(batch):
                self._to_post.put(batch)

    def _infer(self, batch: _Batch) -> bool:
        start_s = time.perf_counter()
        try:
            batch.outputs = batch.detector.infer(batch.prepared)
        except Exception:
            self._in_flight.release(batch.detector)
            self._failed("infer", "inference failed on a batch of %d frames", len(batch.frames))
            return False
        batch.infer_ms = (time.perf_counter() - start_s) * 1000.0
        return True

    # -- stage 3: decode, publish, store ---------------------------------------------------------
    def _post_loop(self) -> None:
        while True:
            batch = self._get(self._to_post)
            if batch is _STOP:
                return
            self._post(batch)

    def _post(self, batch: _Batch) -> None:
        start_s = time.perf_counter()
        try:
            results = batch.detector.postprocess(batch.outputs, batch.prepared)
        except Exception:
            self._failed("postprocess", "decoding failed on a batch of %d frames", len(batch.frames))
            return
        finally:
            # The outputs were read: the detector may reuse their buffers.
            self._in_flight.release(batch.detector)
        post_ms = (time.perf_counter() - start_s) * 1000.0
        n = len(batch.frames)
        shared_ms = {"preprocess": batch.prep_ms / n, "inference": batch.infer_ms / n, "postprocess": post_ms / n}
        waits_ms = batch.waits_ms or [(0.0, 0.0)] * n
        delivered = False
        lanes = None if batch.detector.runs_on_host_cpu else self._lanes
        for frame, detections, (capture_ms, batching_ms) in zip(batch.frames, results, waits_ms):
            timings_ms = {"capture": capture_ms, "batching": batching_ms, **shared_ms}
            if lanes is not None:
                lanes.submit(frame.camera_id, functools.partial(self._sink.handle, frame, detections, timings_ms))
                delivered = True
                continue
            try:
                self._sink.handle(frame, detections, timings_ms)
                delivered = True
            except Exception:
                self._failed("publish", "publishing the result of camera %s failed", frame.camera_id)
        if delivered:
            self._activity.batch_done(self._clock())
            self._batch_rate.tick(self._clock())

    def _lane_failed(self, camera_id: str) -> None:
        self._failed("publish", "publishing the result of camera %s failed", camera_id)

    def batches_per_s(self) -> float:
        return round(self._batch_rate.rate(self._clock()), 2)

    @property
    def started(self) -> bool:
        return self._running
