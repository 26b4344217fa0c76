"""Pipeline threads: batching across cameras, stale-frame replacement and the WAIT policy.

The detector here is ``EchoDetector``, a test double that reports one box whose confidence is
the frame's fill value, so a frame credited to the wrong camera is visible. The real model runs
through the same Pipeline in tests/e2e.
"""
import threading
import time
from typing import List, Optional

import numpy as np
import pytest

from edge_app.capture.frame import Frame
from edge_app.detect.base import Detector, LetterboxMeta, PreparedBatch
from edge_app.detect.detections import Detections
from edge_app.pipeline.results import ResultStore
from edge_app.pipeline.runner import Pipeline
from edge_app.pipeline.scheduler import BatchScheduler


class EchoDetector(Detector):
    backend_name = ""  # not registered as a backend

    def __init__(self, max_batch: int, on_host_cpu: bool = True, max_batches_in_flight: int = 3):
        self.max_batch = max_batch
        self.runs_on_host_cpu = on_host_cpu
        self.max_batches_in_flight = max_batches_in_flight
        self.labels = ["thing"]
        self.batch_sizes: List[int] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def preprocess(self, frames):
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        return PreparedBatch(np.stack([f[:1, :1, 0].astype(np.float32) for f in frames]),
                             [LetterboxMeta(f.shape[:2], 1.0, (0, 0)) for f in frames])

    def infer(self, batch):
        self.batch_sizes.append(batch.size)
        time.sleep(0.02)
        return [batch.tensor]

    def postprocess(self, outputs, batch):
        time.sleep(0.02)
        with self._lock:
            self.in_flight -= 1
        return [Detections(np.array([[0, 0, 1, 1]], np.float32), np.array([v.item() / 255.0], np.float32),
                           np.array([0], np.int32), self.labels) for v in outputs[0]]


class ListSource:
    """Hands out prepared frames; ``live`` replaces unconsumed frames like a camera would."""

    def __init__(self, camera_id: str, value: int, count: int, waits: bool):
        self.camera_id, self.value, self.waits = camera_id, value, waits
        self.frames = [Frame(camera_id, i + 1, time.time(), time.monotonic(), np.full((4, 4, 3), value, np.uint8)) for i in range(count)]
        self.lock = threading.Lock()
        self.taken = 0

    @property
    def waits_for_consumer(self) -> bool:
        return self.waits

    def take(self) -> Optional[Frame]:
        with self.lock:
            if not self.frames:
                return None
            self.taken += 1
            return self.frames.pop(0)


def run_pipeline(sources, max_batch, until, on_host_cpu=True, max_batches_in_flight=3):
    published = []
    store = ResultStore(published.append)
    detector = EchoDetector(max_batch, on_host_cpu, max_batches_in_flight)
    pipeline = Pipeline(lambda: detector, lambda: sources, store, BatchScheduler(max_batch, 0.005))
    pipeline.reconfigure({cid: 0 for cid in sources}, max_batch, 0.005)
    pipeline.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not until(published):
        pipeline.notify_frame()
        time.sleep(0.01)
    pipeline.stop()
    return published, store, detector


@pytest.mark.parametrize("on_host_cpu", [True, False], ids=["stages-in-one-thread", "overlapped-stages"])
def test_frames_of_a_waiting_source_are_all_analysed_in_order(on_host_cpu):
    src = ListSource("file", 10, 30, waits=True)
    published, store, _ = run_pipeline({"file": src}, max_batch=1, until=lambda p: len(p) >= 30, on_host_cpu=on_host_cpu)
    assert [p.frame_id for p in published] == list(range(1, 31))


class LiveSource:
    """A camera delivering 200 frames/s into a newest-frame slot, as CameraWorker does for live streams."""

    waits_for_consumer = False

    def __init__(self, camera_id: str, value: int):
        self.camera_id, self.value = camera_id, value
        self.newest: Optional[Frame] = None
        self.produced = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        threading.Thread(target=self._produce, daemon=True).start()

    def _produce(self):
        while not self.stop.wait(0.005):
            with self.lock:
                self.produced += 1
                self.newest = Frame(self.camera_id, self.produced, time.time(), time.monotonic(), np.full((4, 4, 3), self.value, np.uint8))

    def take(self) -> Optional[Frame]:
        with self.lock:
            frame, self.newest = self.newest, None
            return frame


def test_live_cameras_behind_a_slow_model_get_fresh_frames_and_fair_turns():
    sources = {"a": LiveSource("a", 10), "b": LiveSource("b", 20)}
    published, store, _ = run_pipeline(sources, max_batch=1, until=lambda p: len(p) >= 40)
    for src in sources.values():
        src.stop.set()
    per_cam = {cid: [p.frame_id for p in published if p.camera_id == cid] for cid in sources}
    for cid, ids in per_cam.items():
        assert ids == sorted(set(ids)), "a camera's frames must never go backwards"
        assert len(ids) >= 0.8 * len(published) / 2, f"camera {cid} starved: {len(ids)} of {len(published)}"
    # While one camera is in the model the other's pending frame is replaced by a newer one.
    assert store.camera_figures("a").frames_stale + store.camera_figures("b").frames_stale > 0
    # Frames are not queued behind the model: each analysed frame is at most a few model runs old.
    assert store.latency.percentiles()["p99"] < 500


@pytest.mark.parametrize("on_host_cpu", [True, False], ids=["stages-in-one-thread", "overlapped-stages"])
def test_cameras_are_batched_together_and_keep_their_own_results(on_host_cpu):
    sources = {f"cam{i}": ListSource(f"cam{i}", 40 * (i + 1), 12, waits=True) for i in range(4)}
    published, store, detector = run_pipeline(sources, max_batch=4, until=lambda p: len(p) >= 48, on_host_cpu=on_host_cpu)
    assert max(detector.batch_sizes) == 4
    for frame in published:
        cam_index = int(frame.camera_id[3:])
        assert float(frame.detections.confidence[0]) == pytest.approx(40 * (cam_index + 1) / 255.0, abs=1e-3)
    per_cam = {cid: [p.frame_id for p in published if p.camera_id == cid] for cid in sources}
    assert all(ids == list(range(1, 13)) for ids in per_cam.values())


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_overlapped_stages_keep_no_more_batches_in_flight_than_the_detector_allows(limit):
    """The detector's buffers are reused after ``max_batches_in_flight`` batches; never exceed it."""
    sources = {"a": ListSource("a", 10, 40, waits=True), "b": ListSource("b", 20, 40, waits=True)}
    published, _, detector = run_pipeline(sources, 1, lambda p: len(p) >= 80, on_host_cpu=False,
                                          max_batches_in_flight=limit)
    assert len(published) == 80
    assert detector.most_in_flight == limit


class GatedDetector(EchoDetector):
    """An EchoDetector whose first ``infer`` waits for ``gate``: the model is busy until the test says."""

    def __init__(self, max_batch: int, max_batches_in_flight: int):
        super().__init__(max_batch, on_host_cpu=False, max_batches_in_flight=max_batches_in_flight)
        self.gate = threading.Event()
        self.first_batch_started = threading.Event()

    def infer(self, batch):
        if not self.first_batch_started.is_set():
            self.first_batch_started.set()
            assert self.gate.wait(10)
        return super().infer(batch)


class FeedSource:
    """A file camera whose frames the test hands in one at a time (WAIT policy)."""

    waits_for_consumer = True

    def __init__(self, camera_id: str):
        self.camera_id = camera_id
        self.frames: List[Frame] = []
        self.lock = threading.Lock()
        self.delivered = 0

    def deliver(self) -> None:
        with self.lock:
            self.delivered += 1
            self.frames.append(Frame(self.camera_id, self.delivered, time.time(), time.monotonic(),
                                     np.full((4, 4, 3), 10, np.uint8)))

    def take(self) -> Optional[Frame]:
        with self.lock:
            return self.frames.pop(0) if self.frames else None


def test_frames_are_chosen_when_the_pipeline_has_room_for_their_batch():
    """While the model holds the only place in the pipeline, cameras that deliver late must
    still join the next batch.

    Frames chosen before there is room for their batch (here one camera's, once the 5 ms batch
    timeout passed) wait with it, and the cameras that deliver during the wait go in a batch of
    their own: [4, 1, 3] instead of [4, 4]."""
    sources = {f"cam{i}": FeedSource(f"cam{i}") for i in range(4)}
    published = []
    detector = GatedDetector(max_batch=4, max_batches_in_flight=1)
    pipeline = Pipeline(lambda: detector, lambda: sources, ResultStore(published.append), BatchScheduler(4, 0.005))
    pipeline.reconfigure({cid: 0 for cid in sources}, 4, 0.005)
    pipeline.start()
    try:
        for source in sources.values():
            source.deliver()
        pipeline.notify_frame()
        assert detector.first_batch_started.wait(5)
        sources["cam0"].deliver()  # one camera early: its frame waits well past the batch timeout
        pipeline.notify_frame()
        time.sleep(0.2)
        for cid in ("cam1", "cam2", "cam3"):
            sources[cid].deliver()
        pipeline.notify_frame()
        time.sleep(0.05)
        detector.gate.set()
        deadline = time.monotonic() + 10
        while len(published) < 8 and time.monotonic() < deadline:
            pipeline.notify_frame()
            time.sleep(0.01)
    finally:
        detector.gate.set()
        pipeline.stop()
    assert len(published) == 8
    assert detector.batch_sizes == [4, 4]


class FlakyScheduler(BatchScheduler):
    """A scheduler whose ``plan`` raises ``failures`` times, then works (or raises forever)."""

    def __init__(self, max_batch: int, failures: Optional[int]):
        super().__init__(max_batch, 0.005)
        self.failures = failures
        self.calls = 0

    def plan(self, ready, now_s):
        self.calls += 1
        if self.failures is None or self.calls <= self.failures:
            raise RuntimeError("planning bug")
        return super().plan(ready, now_s)


def _pipeline_with(scheduler, sources):
    published = []
    store = ResultStore(published.append)
    detector = EchoDetector(1)
    pipeline = Pipeline(lambda: detector, lambda: sources, store, scheduler)
    pipeline.reconfigure({cid: 0 for cid in sources}, 1, 0.005)
    return pipeline, published


def test_an_exception_in_plan_is_logged_and_the_loop_goes_on(caplog):
    from edge_app.pipeline.stall_watch import assess

    src = ListSource("file", 10, 5, waits=True)
    pipeline, published = _pipeline_with(FlakyScheduler(1, failures=1), {"file": src})
    pipeline.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(published) < 5:
            pipeline.notify_frame()
            time.sleep(0.01)
        activity = pipeline.activity()
    finally:
        pipeline.stop()
    assert [p.frame_id for p in published] == [1, 2, 3, 4, 5]
    assert pipeline.errors == 1
    assert "the pipeline's gather step failed" in caplog.text and "planning bug" in caplog.text
    assert activity.gather_alive and activity.last_batch_s is not None
    assert not assess(activity, time.monotonic(), stall_after_s=0.5).stalled


def test_a_plan_that_always_fails_is_a_stall_logged_once(caplog):
    from edge_app.pipeline.stall_watch import assess

    src = ListSource("file", 10, 5, waits=True)
    pipeline, published = _pipeline_with(FlakyScheduler(1, failures=None), {"file": src})
    pipeline.start()
    try:
        time.sleep(1.0)
        activity = pipeline.activity()
        errors = pipeline.errors
    finally:
        pipeline.stop()
    assert published == []
    assert errors >= 5, "the loop must go on trying"
    assert caplog.text.count("the pipeline's gather step failed") == 1, "repeats are rate-limited"
    assert activity.gather_alive and activity.work_since_s is not None
    health = assess(activity, time.monotonic(), stall_after_s=0.5)
    assert health.stalled and health.last_batch_age_s is None
    assert health.reason.endswith("(last error: the pipeline's gather step failed (RuntimeError))")
    assert not assess(pipeline.activity(), time.monotonic(), stall_after_s=0.5).stalled, "a stopped pipeline is not stalled"


@pytest.mark.parametrize("on_host_cpu", [True, False], ids=["stages-in-one-thread", "overlapped-stages"])
def test_every_analysed_frame_counts_once_in_each_pipeline_stage(on_host_cpu):
    src = ListSource("file", 10, 12, waits=True)
    published, store, _ = run_pipeline({"file": src}, max_batch=1, until=lambda p: len(p) >= 12, on_host_cpu=on_host_cpu)
    frames = {t.stage: t.frames for t in store.stage_times.totals()}
    assert set(frames) == {"capture", "batching", "preprocess", "inference", "postprocess", "mqtt", "status"}
    assert set(frames.values()) == {len(published)}
