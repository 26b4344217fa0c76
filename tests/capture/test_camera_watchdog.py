"""CameraWorker failure handling with scripted sources: blocking calls, failures, listeners."""
import threading
import time
from typing import List, Optional

import numpy as np

from edge_app.capture import CameraWorker, StreamState
from edge_app.config.schema import CaptureConfig

from tests.capture.helpers import FAST, StateLog, camera, timed_stop, wait_for

S = StreamState
QUICK = CaptureConfig(stall_timeout_s=0.4, backoff_initial_s=0.05, backoff_max_s=0.2, open_timeout_s=0.4)


class ScriptedSource:
    """Delivers ``frames`` small images, then does what ``then`` says: "block", "fail" or "raise"."""

    fps = 0.0

    def __init__(self, frames: int, then: str, unblock: threading.Event) -> None:
        self.remaining = frames
        self.then = then
        self.unblock = unblock
        self.released = threading.Event()

    def read(self) -> Optional[np.ndarray]:
        if self.remaining > 0:
            self.remaining -= 1
            time.sleep(0.01)
            return np.zeros((8, 8, 3), np.uint8)
        if self.then == "block":
            self.unblock.wait()  # like a GStreamer appsink that never returns
            return None
        if self.then == "raise":
            raise RuntimeError("backend exploded")
        return None

    def release(self) -> None:
        self.released.set()


class ScriptedOpener:
    """Hands out ScriptedSources from a plan; records threads that called it."""

    def __init__(self, plan: List[tuple]) -> None:
        self.plan = list(plan)
        self.unblock = threading.Event()
        self.sources: List[ScriptedSource] = []
        self.calls = 0
        self.threads: List[str] = []

    def __call__(self, spec, capture):
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        frames, then = self.plan.pop(0) if self.plan else (1000, "block")
        if then == "block_open":
            self.unblock.wait()
            raise RuntimeError("open finally gave up")
        if then == "refuse":
            raise RuntimeError("connection refused")
        source = ScriptedSource(frames, then, self.unblock)
        self.sources.append(source)
        return source


def live_camera(**options):
    return camera("rtsp://cam.invalid/stream", **options)


def test_watchdog_replaces_a_capture_thread_stuck_in_read():
    opener = ScriptedOpener([(3, "block"), (1000, "fail")])
    log = StateLog()
    worker = CameraWorker(live_camera(), QUICK, on_state=log, opener=opener)
    worker.start()
    try:
        assert wait_for(lambda: worker.stats()["frames_captured"] >= 3, 5)
        assert wait_for(lambda: S.RECONNECTING in log.states(), 5)
        assert "read never returned" in worker.last_error
        assert any(t.name == "capture:cam1:abandoned" for t in threading.enumerate())
        # A fresh thread opened the source again and frames flow again.
        assert wait_for(lambda: opener.calls >= 2 and worker.state is S.STREAMING, 5)
        assert opener.threads == ["capture:cam1", "capture:cam1"]
        assert log.states()[:3] == [S.CONNECTING, S.STREAMING, S.RECONNECTING]
        assert worker.stats()["reconnects"] >= 1
        ids = []
        assert wait_for(lambda: (f := worker.take()) is not None and ids.append(f.frame_id) is None, 5)
        assert ids[0] > 3  # frame ids keep counting across the replacement
    finally:
        assert timed_stop(worker) < 5
        opener.unblock.set()
    # The stuck thread exits once its call returns, releasing its capture, without side effects.
    assert wait_for(lambda: opener.sources[0].released.is_set(), 5)
    assert wait_for(lambda: not any(t.name.startswith("capture:cam1") for t in threading.enumerate()), 5)
    assert worker.state is S.STOPPED


def test_watchdog_replaces_a_capture_thread_stuck_in_open():
    opener = ScriptedOpener([(0, "block_open"), (1000, "fail")])
    worker = CameraWorker(live_camera(), QUICK, opener=opener)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.RECONNECTING, 5)
        assert "open never returned" in worker.last_error
        assert wait_for(lambda: worker.state is S.STREAMING, 5)
    finally:
        worker.stop()
        opener.unblock.set()


def test_stop_returns_within_its_timeout_while_a_read_blocks():
    opener = ScriptedOpener([(2, "block")])
    slow_watchdog = FAST.model_copy(update={"stall_timeout_s": 60.0})
    worker = CameraWorker(live_camera(), slow_watchdog, opener=opener)
    worker.start()
    try:
        assert wait_for(lambda: worker.stats()["frames_captured"] == 2, 5)
        time.sleep(0.1)
        elapsed = timed_stop(worker, timeout_s=0.5)
        assert 0.4 < elapsed < 1.0
        assert worker.state is S.STOPPED
    finally:
        opener.unblock.set()
    assert wait_for(lambda: opener.sources[0].released.is_set(), 5)
    assert worker.state is S.STOPPED  # the late return of the read changed nothing


def test_read_failures_reconnect_with_backoff_and_recover():
    opener = ScriptedOpener([(5, "fail"), (0, "refuse"), (0, "refuse"), (5, "raise"), (1000, "fail")])
    log = StateLog()
    worker = CameraWorker(live_camera(), QUICK, on_state=log, opener=opener)
    worker.start()
    try:
        assert wait_for(lambda: opener.calls >= 5 and worker.state is S.STREAMING, 10)
        assert log.states() == [S.CONNECTING, S.STREAMING, S.RECONNECTING, S.STREAMING, S.RECONNECTING, S.STREAMING]
        assert worker.stats()["reconnects"] == 4
        assert "backend exploded" in worker.last_error  # the last error is kept after recovery
        assert log.events[-1][2] is None  # streaming carries no error
    finally:
        worker.stop()
        opener.unblock.set()


def test_a_failing_state_listener_does_not_stop_capture():
    def listener(camera_id, state, error):
        raise ValueError("listener bug")

    worker = CameraWorker(camera("test://bars?width=16&height=16&fps=50"), FAST, on_state=listener,
                          on_frame=lambda: 1 / 0)
    worker.start()
    try:
        assert wait_for(lambda: worker.stats()["frames_captured"] > 10, 5)
        assert worker.state is S.STREAMING
    finally:
        worker.stop()


def test_one_camera_failing_does_not_affect_another(tmp_path):
    bad = CameraWorker(camera(str(tmp_path / "missing.mp4"), id="bad"), QUICK)
    err = CameraWorker(camera("csi://0", id="err"), QUICK)
    good = CameraWorker(camera("test://box?width=32&height=32&fps=30", id="good"), QUICK)
    workers = [bad, err, good]
    for worker in workers:
        worker.start()
    try:
        time.sleep(1.5)
        assert bad.state is S.RECONNECTING
        assert err.state is not S.STREAMING or err.stats()["frames_captured"] > 0
        assert good.state is S.STREAMING
        assert good.stats()["fps"] > 20
        assert good.stats()["reconnects"] == 0
    finally:
        for worker in workers:
            assert timed_stop(worker) < 5


def test_pictures_a_source_dropped_count_as_dropped_frames_across_reconnects():
    """A decoder process of a live stream drops pictures it could not hand over and says so in
    ``dropped``; the camera's frames_dropped adds them up, for closed sources and the open one."""

    class DroppingOpener(ScriptedOpener):
        def __call__(self, spec, capture):
            source = super().__call__(spec, capture)
            source.dropped = (7, 5)[len(self.sources) - 1]
            return source

    opener = DroppingOpener([(2, "fail"), (1, "block")])
    worker = CameraWorker(live_camera(), QUICK, opener=opener)
    worker.start()
    try:
        # the first source ended (a reconnect), the second delivered its frame and waits
        assert wait_for(lambda: worker.stats()["frames_captured"] == 3 and len(opener.sources) == 2, 5)
        assert worker.stats()["frames_dropped"] == worker._slot.dropped + 7 + 5
    finally:
        opener.unblock.set()
        timed_stop(worker)
