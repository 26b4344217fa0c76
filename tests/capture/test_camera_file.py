"""CameraWorker on real files and synthetic sources."""
import threading
import time

import pytest

from edge_app.capture import CameraWorker, StreamState
from edge_app.capture.buffer import BufferPolicy
from edge_app.capture.sources import NO_GSTREAMER_MESSAGE, opencv_has_gstreamer
from edge_app.config.schema_cameras import CameraConfig

from tests.capture.helpers import FAST, StateLog, camera, drain, timed_stop, wait_for

S = StreamState


def test_file_without_realtime_delivers_every_frame_once_then_stops(bus_clip):
    log = StateLog()
    worker = CameraWorker(camera(str(bus_clip), realtime=False), FAST, on_state=log)
    assert worker.policy is BufferPolicy.WAIT and worker.waits_for_consumer
    worker.start()
    try:
        # A slow consumer: the file reader must wait for it instead of dropping frames.
        frames = drain(worker, until=lambda: worker.state is S.STOPPED, timeout_s=20, pause_s=0.01)
        ids = [f.frame_id for f in frames]
        assert ids == list(range(1, 21))
        assert {(f.width, f.height) for f in frames} == {(810, 1080)}
        assert all(f.camera_id == "cam1" for f in frames)
        assert all(b.mono_ts > a.mono_ts and b.ts >= a.ts for a, b in zip(frames, frames[1:]))
        assert wait_for(lambda: worker.state is S.STOPPED, 5)
        stats = worker.stats()
        assert stats["frames_captured"] == 20 and stats["frames_dropped"] == 0 and stats["reconnects"] == 0
        assert log.states() == [S.CONNECTING, S.STREAMING, S.STOPPED]
    finally:
        worker.stop()


def test_file_loop_starts_again_and_frame_ids_keep_counting(bus_clip):
    worker = CameraWorker(camera(str(bus_clip), realtime=False, loop=True), FAST)
    worker.start()
    try:
        frames = drain(worker, until=lambda: False, timeout_s=30, max_frames=45)
        assert [f.frame_id for f in frames] == list(range(1, 46))  # 20-frame clip, looped twice and more
        assert worker.state is S.STREAMING
        assert worker.stats()["reconnects"] == 0
    finally:
        assert timed_stop(worker) < 5
    assert worker.state is S.STOPPED


def test_realtime_file_is_paced_at_its_own_fps(bus_clip):
    worker = CameraWorker(camera(str(bus_clip), realtime=True), FAST)
    assert worker.policy is BufferPolicy.DROP_OLDEST and not worker.waits_for_consumer
    started = time.monotonic()
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STOPPED, 15)
        elapsed = time.monotonic() - started
        assert 1.6 < elapsed < 6  # 20 frames at 10 fps: about 2 s, not as fast as decoding
        stats = worker.stats()
        assert stats["frames_captured"] == 20
        assert stats["frames_dropped"] == 19  # nobody consumed: only the newest frame is kept
        assert worker.take().frame_id == 20
    finally:
        worker.stop()


def test_missing_file_reconnects_with_last_error_and_stops_promptly(tmp_path):
    log = StateLog()
    worker = CameraWorker(camera(str(tmp_path / "not-there.mp4")), FAST, on_state=log)
    worker.start()
    try:
        assert wait_for(lambda: worker.stats()["reconnects"] >= 2, 5)
        stats = worker.stats()
        assert stats["state"] == "reconnecting"
        assert "does not exist" in stats["last_error"]
        assert log.states() == [S.CONNECTING, S.RECONNECTING]  # retries do not flap the state
        assert log.events[-1][2] and "not-there.mp4" in log.events[-1][2]
    finally:
        assert timed_stop(worker) < 5
    assert worker.state is S.STOPPED


def test_file_appearing_later_is_picked_up(tmp_path, bus_clip):
    target = tmp_path / "late.mp4"
    worker = CameraWorker(camera(str(target), realtime=False), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.RECONNECTING, 5)
        target.write_bytes(bus_clip.read_bytes())
        assert wait_for(lambda: worker.take() is not None, 10)
        assert worker.state in (S.STREAMING, S.STOPPED)
    finally:
        worker.stop()


def test_missing_v4l2_device_is_retried_not_an_error():
    worker = CameraWorker(camera("/dev/video99"), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.RECONNECTING, 5)
        assert "not plugged in" in worker.last_error
    finally:
        worker.stop()


def test_csi_without_gstreamer_is_a_permanent_error():
    import cv2

    if opencv_has_gstreamer(cv2.getBuildInformation()):
        pytest.skip("this OpenCV has GStreamer")
    log = StateLog()
    worker = CameraWorker(camera("csi://0"), FAST, on_state=log)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.ERROR, 5)
        assert worker.last_error == NO_GSTREAMER_MESSAGE
        time.sleep(0.5)
        assert worker.stats()["reconnects"] == 0  # no retries
        assert log.events[-1] == ("cam1", S.ERROR, NO_GSTREAMER_MESSAGE)
    finally:
        assert timed_stop(worker) < 5
    assert worker.state is S.ERROR  # stopping keeps the reason visible


def test_unsupported_scheme_is_a_permanent_error():
    # The schema refuses it; a worker built around validation must still not crash.
    config = CameraConfig.model_construct(id="odd", source="ftp://host/x.mp4", enabled=True, fps_limit=0,
                                          loop=False, realtime=True)
    worker = CameraWorker(config, FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.ERROR, 5)
        assert "unsupported source scheme 'ftp'" in worker.last_error
    finally:
        worker.stop()


def test_test_source_streams_frames_of_the_requested_size():
    wakeups = threading.Semaphore(0)
    worker = CameraWorker(camera("test://box?width=160&height=120&fps=25"), FAST, on_frame=wakeups.release)
    worker.start()
    try:
        assert wakeups.acquire(timeout=5)
        assert wait_for(lambda: worker.state is S.STREAMING, 5)
        time.sleep(1.2)
        frame = worker.take()
        assert frame is not None and frame.image.shape == (120, 160, 3)
        assert worker.peek() is frame and worker.take() is None
        stats = worker.stats()
        assert 15 < stats["fps"] < 35
        assert stats["frames_dropped"] >= stats["frames_captured"] - 3
        assert threading.current_thread().name != "capture:cam1"
        assert any(t.name == "capture:cam1" for t in threading.enumerate())
    finally:
        assert timed_stop(worker) < 5
    assert not any(t.name == "capture:cam1" for t in threading.enumerate())


def test_stop_is_prompt_while_waiting_for_a_consumer(bus_clip):
    worker = CameraWorker(camera(str(bus_clip), realtime=False), FAST)
    worker.start()
    assert wait_for(lambda: worker.peek() is not None, 10)
    time.sleep(0.2)  # the reader now waits for a take() that never comes
    assert worker.state is S.STREAMING
    assert timed_stop(worker, 5) < 1
    assert worker.state is S.STOPPED


def test_stop_is_prompt_during_backoff(tmp_path):
    slow = FAST.model_copy(update={"backoff_initial_s": 30.0, "backoff_max_s": 30.0})
    worker = CameraWorker(camera(str(tmp_path / "none.mp4")), slow)
    worker.start()
    assert wait_for(lambda: worker.state is S.RECONNECTING, 5)
    assert timed_stop(worker) < 1


def test_start_twice_is_refused_and_stop_before_start_is_harmless():
    worker = CameraWorker(camera("test://black?width=16&height=16"), FAST)
    worker.stop()
    assert worker.state is S.STOPPED
    worker.start()
    with pytest.raises(RuntimeError, match="already started"):
        worker.start()
    worker.stop()
    worker.stop()
    assert worker.state is S.STOPPED


def test_frames_beyond_fps_limit_are_only_grabbed_never_converted(bus_clip):
    """fps_limit 2 on a 10 fps file played in real time: four frames in five are decoded but
    never converted to BGR or handed over; a file read with realtime: false loses none."""
    from edge_app.capture.video_decode.decoders import CameraOpener

    calls = {"read": 0, "grab": 0}

    class Counting:
        def __init__(self, source):
            self._source, self.fps = source, source.fps

        def read(self):
            calls["read"] += 1
            return self._source.read()

        def grab(self):
            calls["grab"] += 1
            return self._source.grab()

        def release(self):
            self._source.release()

    opener = CameraOpener("ffmpeg")
    counting = lambda spec, capture: Counting(opener(spec, capture))  # noqa: E731
    worker = CameraWorker(camera(str(bus_clip), realtime=True, fps_limit=2), FAST, opener=counting)
    worker.start()
    try:
        taken = drain(worker, until=lambda: worker.state is S.STOPPED, timeout_s=15)
        assert [f.frame_id for f in taken] == [1, 6, 11, 16]  # frame ids count the grabbed frames too
        stats = worker.stats()
        assert stats["frames_captured"] == 20 and stats["frames_dropped"] == 16, stats
        assert calls["grab"] == 16 and calls["read"] in (4, 5), calls  # (and the read that finds the end)
    finally:
        worker.stop()

    every = CameraWorker(camera(str(bus_clip), realtime=False, fps_limit=2), FAST)
    every.start()
    try:
        frames = drain(every, until=lambda: every.state is S.STOPPED, timeout_s=20)
        assert [f.frame_id for f in frames] == list(range(1, 21))
    finally:
        every.stop()


def test_a_file_in_real_time_takes_the_frames_its_source_skipped_as_time_passed(tmp_path):
    """A decoder process that keeps one picture in four (its camera's pace) hands over a quarter of
    the frames; played in real time, the file must still take its own length, not a quarter of
    it: otherwise the process decodes four times faster than the camera would send."""
    import numpy as np

    class Skipping:  # the decoder-process source's protocol: read() and take_skipped()
        fps, live = 20.0, False

        def __init__(self):
            self.picture, self.skipped = 0, 0

        def read(self):
            if self.picture >= 40:
                return None
            self.picture += 4  # one kept, three decoded and dropped by the source's schedule
            self.skipped += 3
            return np.zeros((8, 8, 3), np.uint8)

        def take_skipped(self):
            taken, self.skipped = self.skipped, 0
            return taken

        def release(self):
            pass

    path = tmp_path / "clip.mp4"
    path.write_bytes(b"")
    worker = CameraWorker(camera(str(path), realtime=True), FAST, opener=lambda spec, capture: Skipping())
    started = time.monotonic()
    worker.start()
    try:
        frames = drain(worker, until=lambda: worker.state is S.STOPPED, timeout_s=10)
        elapsed_s = time.monotonic() - started
    finally:
        worker.stop()
    assert len(frames) == 10
    assert worker.stats()["frames_dropped"] == 30
    assert elapsed_s >= 1.6  # 40 frames at 20 frames/s: 2 s of stream time (a quarter of it without the fix)
