"""Motion gating on a real camera worker: held-back frames never reach the pipeline, the
appliance-level wiring installs, keeps and removes watches, and publishes ON/OFF."""
import time

import numpy as np

from edge_app.capture import CameraWorker
from edge_app.config.file import parse_config
from edge_app.motion.gating import MotionGating
from edge_app.motion.watch import MotionWatch
from tests.capture.helpers import FAST, camera, wait_for


class _Frames:
    """A live-like source of drawn frames: a still scene, then a box that moves."""

    fps = 50.0
    live = True

    def __init__(self, moving_after: int) -> None:
        self._index = 0
        self._moving_after = moving_after
        self._scene = np.full((180, 320, 3), 90, np.uint8)

    def read(self):
        time.sleep(1 / self.fps)
        self._index += 1
        frame = self._scene.copy()
        if self._index > self._moving_after:
            x = (self._index * 7) % 260
            frame[40:120, x:x + 40] = 230
        return frame

    def release(self):
        pass


def _config(**motion):
    return parse_config({"cameras": [{"id": "cam1", "source": "test://box"}], "model": {"path": "m.onnx"},
                         "motion": {"keepalive_s": 0.5, **motion}})


def test_held_back_frames_are_never_offered_but_stay_the_newest():
    config = _config()
    cam = config.cameras[0]
    worker = CameraWorker(cam, FAST, opener=lambda spec, capture: _Frames(moving_after=40))
    changes = []
    watch = MotionWatch(cam, config.motion, on_change=changes.append)
    worker.use_motion(watch)
    worker.start()
    try:
        taken = []
        assert wait_for(lambda: (taken.extend(f for f in [worker.take()] if f is not None)
                                 or worker.stats()["frames_captured"] >= 30), 5)
        # 30 still frames at 50 fps: the first one (keepalive) and at most one more keepalive
        assert 1 <= len(taken) <= 2, [f.frame_id for f in taken]
        assert worker.peek().frame_id >= 20 and worker.newest_held_back  # the latest frame the gate saw
        stats = worker.stats()
        report = stats["motion"]
        assert report.frames_skipped >= 1 and not report.motion and report.last_reason == "idle"
        # while idle the gate looks 5 times a second; the frames between were dropped before it
        assert report.frames_checked <= 6 and stats["frames_dropped"] >= 20, stats
        assert wait_for(lambda: worker.stats()["motion"].motion, 5)
        # the report shows the gate's state as soon as it decides; the listener hears it after
        assert wait_for(lambda: changes == [True], 2), changes
        assert wait_for(lambda: worker.take() is not None, 2)
        assert worker.stats()["motion"].last_reason == "motion"
    finally:
        worker.stop()


class _Worker:
    def __init__(self, waits_for_consumer=False):
        self.admission = "unset"
        self.waits_for_consumer = waits_for_consumer

    def use_motion(self, admission):
        self.admission = admission


def test_watches_follow_the_configuration_and_publish_off():
    published = []
    gating = MotionGating(lambda cid: False, lambda cid, motion: published.append((cid, motion)))
    worker = _Worker()
    config = _config()
    gating.configure(config, {"cam1": worker})
    watch = worker.admission
    assert isinstance(watch, MotionWatch) and published == [("cam1", False)]
    gating.configure(config.model_copy(update={"device_id": "other"}), {"cam1": worker})
    assert worker.admission is watch  # nothing of motion changed: the background is kept
    masked = _config()
    masked.cameras[0].motion.masks = [[(0, 0), (1, 0), (1, 1), (0, 1)]]
    gating.configure(masked, {"cam1": worker})
    assert worker.admission is not watch and isinstance(worker.admission, MotionWatch)
    gating.configure(_config(enabled=False), {"cam1": worker})
    assert worker.admission is None and published[-1] == ("cam1", False)
    detect_off = _config()
    detect_off.cameras[0].detect = False
    gating.configure(detect_off, {"cam1": worker})
    assert worker.admission is None
    gating.configure(_config(), {"cam1": worker})
    new_worker = _Worker()
    gating.configure(_config(), {"cam1": new_worker})  # the camera was restarted
    assert isinstance(new_worker.admission, MotionWatch)
    file_worker = _Worker(waits_for_consumer=True)  # a file read with realtime: false loses no frame
    gating.configure(_config(), {"cam1": file_worker})
    assert file_worker.admission in ("unset", None)


def test_a_whole_frame_mask_runs_on_keepalive_and_says_so():
    config = _config()
    cam = config.cameras[0]
    cam.motion.masks = [[(0, 0), (1, 0), (1, 1), (0, 1)]]
    watch = MotionWatch(cam, config.motion)
    moving = _Frames(moving_after=0)
    admitted = [watch.admit(moving.read(), k * 0.1) for k in range(20)]
    assert [k for k, a in enumerate(admitted) if a] == [0, 5, 10, 15]
    report = watch.report()
    assert report.keepalive_only and report.masked_fraction == 1.0 and not report.motion


def test_tracked_objects_keep_frames_coming_and_a_failing_question_lets_them_through():
    config = _config()
    still = np.full((180, 320, 3), 90, np.uint8)
    tracked = MotionWatch(config.cameras[0], config.motion, has_objects=lambda: True)
    assert all(tracked.admit(still, k * 0.1) for k in range(10))

    def broken():
        raise RuntimeError("no analysis")
    unsure = MotionWatch(config.cameras[0], config.motion, has_objects=broken)
    assert all(unsure.admit(still, k * 0.1) for k in range(3))
