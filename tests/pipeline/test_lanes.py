"""Per-camera result lanes: cameras side by side, each camera's results in order."""
import threading
import time

import pytest

from edge_app.pipeline.lanes import CameraLanes


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_each_cameras_work_runs_in_order_and_all_of_it_runs(lanes):
    done, lock = [], threading.Lock()
    pool = CameraLanes(lanes, "test", on_error=lambda camera: None, depth=2)

    def work(camera, i):
        def run():
            time.sleep(0.001 * (i % 3))  # uneven work must not reorder a camera's results
            with lock:
                done.append((camera, i))
        return run

    for i in range(30):
        for camera in ("a", "b", "c", "d"):
            pool.submit(camera, work(camera, i))
    pool.stop(5.0)
    assert len(done) == 120
    for camera in ("a", "b", "c", "d"):
        assert [i for c, i in done if c == camera] == list(range(30))


def test_cameras_keep_their_lane_and_spread_over_the_lanes():
    pool = CameraLanes(2, "test", on_error=lambda camera: None)
    assert [pool.lane_of(c) for c in ("a", "b", "c", "a", "b")] == [0, 1, 0, 0, 1]
    pool.stop(1.0)


def test_cameras_run_side_by_side():
    started, release = threading.Barrier(3, timeout=5), threading.Event()  # two lanes and this test
    pool = CameraLanes(2, "test", on_error=lambda camera: None)
    for camera in ("a", "b"):
        pool.submit(camera, lambda: (started.wait(), release.wait(5)))
    started_both = True
    try:
        started.wait()  # both lanes are in their work at once, or this times out
    except threading.BrokenBarrierError:
        started_both = False
    release.set()
    pool.stop(5.0)
    assert started_both


def test_a_failing_work_is_reported_with_its_camera_and_the_lane_goes_on():
    failed, done = [], []
    pool = CameraLanes(1, "test", on_error=failed.append)
    pool.submit("a", lambda: 1 / 0)
    pool.submit("a", lambda: done.append(1))
    pool.stop(5.0)
    assert failed == ["a"] and done == [1]
