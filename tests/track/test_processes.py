"""Trackers in child processes (tracking.processes): the same ids as a tracker here, and a child that
dies costs its cameras their tracks, never an id reused or an event left open."""
import inspect
import math
import os
import signal
import time

import numpy as np
import pytest

from edge_app.detect.detections import Detections
from edge_app.track.processes import TrackerProcesses, default_tracker_processes
from edge_app.track.remote_tracker import RemoteTracker
from edge_app.track.tracker_host import TrackerUnavailable
from edge_app.track.tracker import Tracker, TrackerLike, TrackerSettings
from bench.cpu.analysis_path_worker import scene


@pytest.fixture
def processes():
    pool = TrackerProcesses(2)
    yield pool
    pool.close()


def _frame(boxes, scores=None, classes=None) -> Detections:
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    n = len(boxes)
    return Detections(boxes, np.full(n, 0.9, np.float32) if scores is None else scores,
                      np.zeros(n, np.int32) if classes is None else classes)


def walking_frames(objects: int, frames: int):
    """The analysis-path benchmark's walkers: arriving, leaving, missed for a frame, low-score clutter."""
    return [Detections(boxes, scores, classes) for _, classes, boxes, scores, _ in scene(objects, frames)]


def _walk(step: int):
    """Two people walking apart, frame ``step``."""
    return _frame([[100 + 6 * step, 100, 160 + 6 * step, 260], [600 - 5 * step, 120, 660 - 5 * step, 290]])


PROTOCOL_METHODS = [name for name, value in vars(TrackerLike).items()
                    if inspect.isfunction(value) and (not name.startswith("_") or name == "__len__")]


def test_the_protocol_names_what_the_analysis_calls():
    assert set(PROTOCOL_METHODS) == {"__len__", "active_ids", "update", "expire", "reset", "close"}
    assert set(TrackerLike.__annotations__) == {"settings", "removed_ids"}


@pytest.mark.parametrize("method", PROTOCOL_METHODS)
@pytest.mark.parametrize("cls", [Tracker, RemoteTracker])
def test_both_trackers_take_what_the_protocol_takes(cls, method):
    real = inspect.signature(getattr(TrackerLike, method))
    assert list(inspect.signature(getattr(cls, method)).parameters) == list(real.parameters)


def test_a_remote_tracker_has_the_protocols_attributes(processes):
    tracker = processes.tracker("cam0", TrackerSettings(confirm_hits=3))
    assert tracker.settings == TrackerSettings(confirm_hits=3) and tracker.removed_ids == ()


@pytest.mark.parametrize("objects, frames", [(1, 30), (5, 80), (20, 60)])
def test_a_tracker_in_a_child_gives_the_ids_a_tracker_here_gives(processes, objects, frames):
    remote, here = processes.tracker("cam0", TrackerSettings()), Tracker(TrackerSettings())
    for index, detections in enumerate(walking_frames(objects, frames)):
        ts = 1_800_000_000.0 + index / 10
        assert remote.update(detections, ts).tolist() == here.update(detections, ts).tolist()
        assert remote.removed_ids == here.removed_ids
        assert len(remote) == len(here) and remote.active_ids() == here.active_ids()
    assert remote.expire(1_800_000_100.0) == here.expire(1_800_000_100.0)
    assert len(remote) == len(here) == 0


def test_cameras_keep_their_own_tracks_in_one_child(processes):
    a, b = processes.tracker("cam0", TrackerSettings()), processes.tracker("cam1", TrackerSettings())
    for step in range(5):
        a.update(_walk(step), step / 10)
    b.update(_frame([[10, 10, 50, 90]]), 0.0)
    assert len(a) == 2 and len(b) == 1
    assert a.update(_walk(5), 0.5).tolist() == [1, 2]


def test_a_child_that_dies_ends_its_tracks_and_ids_go_on_counting(processes):
    tracker = processes.tracker("cam0", TrackerSettings())
    for step in range(4):
        ids = tracker.update(_walk(step), step / 10)
    assert ids.tolist() == [1, 2]
    os.kill(processes.pids()[0], signal.SIGKILL)
    with pytest.raises(TrackerUnavailable):
        tracker.update(_walk(4), 0.4)
    assert len(tracker) == 2  # what it knew last, until a child answers again
    first = tracker.update(_walk(5), 0.5)
    assert first.tolist() == [-1, -1]  # tentative again in the new child
    assert set(tracker.removed_ids) == {1, 2}  # their events end, as after a camera restart
    assert tracker.update(_walk(6), 0.6).tolist() == [3, 4]  # never 1 and 2 again
    assert tracker.removed_ids == ()
    assert processes.restarts() == 1


def test_closing_a_tracker_whose_child_died_starts_no_child(processes):
    tracker = processes.tracker("cam0", TrackerSettings())
    tracker.update(_walk(0), 0.0)
    os.kill(processes.pids()[0], signal.SIGKILL)
    with pytest.raises(TrackerUnavailable):
        tracker.update(_walk(1), 0.1)
    tracker.close()
    assert processes.pids() == [None, None]


def test_a_request_the_tracker_refuses_raises_as_it_does_here(processes):
    tracker = processes.tracker("cam0", TrackerSettings())
    with pytest.raises(ValueError, match="finite"):
        tracker.update(_walk(0), math.nan)
    assert tracker.update(_walk(0), 0.0).tolist() == [-1, -1]  # the child lives on


def test_reset_forgets_every_track_even_when_the_child_is_gone(processes):
    tracker = processes.tracker("cam0", TrackerSettings())
    for step in range(3):
        tracker.update(_walk(step), step / 10)
    os.kill(processes.pids()[0], signal.SIGKILL)
    time.sleep(0.2)
    tracker.reset()
    assert len(tracker) == 0 and tracker.active_ids() == () and tracker.removed_ids == ()


def test_a_child_that_hangs_is_given_up_within_the_answer_timeout():
    pool = TrackerProcesses(1, answer_timeout_s=1.0)
    try:
        tracker = pool.tracker("cam0", TrackerSettings())
        tracker.update(_walk(0), 0.0)
        os.kill(pool.pids()[0], signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(TrackerUnavailable, match="did not answer"):
            tracker.update(_walk(1), 0.1)
        assert time.monotonic() - started < 5.0
        assert tracker.update(_walk(2), 0.2).tolist() == [-1, -1]  # a new child
    finally:
        pool.close()


def test_close_stops_every_child_and_refuses_afterwards():
    pool = TrackerProcesses(2)
    a, b = pool.tracker("cam0", TrackerSettings()), pool.tracker("cam1", TrackerSettings())
    a.update(_walk(0), 0.0)
    b.update(_walk(0), 0.0)
    pids = pool.pids()
    assert all(pids)
    pool.close()
    assert pool.pids() == [None, None]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(TrackerUnavailable):
        a.update(_walk(1), 0.1)


@pytest.mark.parametrize("cores, expected", [(1, 0), (2, 0), (3, 0), (4, 1), (6, 1), (8, 2), (12, 3), (16, 4), (64, 4)])
def test_auto_is_one_child_per_four_cores_at_most_four(cores, expected):
    assert default_tracker_processes(cores) == expected


@pytest.mark.parametrize("first_id", [0, -3])
def test_a_tracker_refuses_ids_below_one(first_id):
    with pytest.raises(ValueError):
        Tracker(TrackerSettings(), first_id=first_id)
