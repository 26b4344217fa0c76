"""CPU by thread and child-process group, read from /proc: real threads, a real child process."""
import multiprocessing
import threading
import time

import numpy as np
import pytest

from edge_app.health.cpu_groups import NATIVE, child_group, cpu_by_group, thread_group


@pytest.mark.parametrize("name, group", [
    ("pipeline:lane0", "lane0"),
    ("pipeline:gather", "gather"),
    ("pipeline:people:lane1", "lane1"),  # a second model's lanes count with the first's
    ("capture:front", "capture"),
    ("mqtt-sender", "mqtt"),
    ("paho-mqtt-client-edge-1", "mqtt"),
    ("MainThread", "main"),
    ("http-worker-3", "other"),
])
def test_a_thread_is_grouped_by_its_name(name, group):
    assert thread_group(name) == group


@pytest.mark.parametrize("name, group", [
    ("edge-app-tracker-0", "trackers"),
    ("engine", "engine"),
    ("decode:front", "decoders"),
])
def test_a_child_process_is_grouped_by_its_name(name, group):
    assert child_group(name) == group


def _spin(stop: threading.Event) -> None:
    x = np.zeros(1000)
    while not stop.is_set():
        x = np.sqrt(x + 1.0)


def test_a_busy_lane_shows_in_its_group_and_the_process_adds_up():
    before = cpu_by_group().get("lane0", 0.0)
    stop = threading.Event()
    lane = threading.Thread(target=_spin, args=(stop,), name="pipeline:lane0")
    lane.start()
    try:
        time.sleep(0.5)
        during = cpu_by_group()
    finally:
        stop.set()
        lane.join()
    assert during["lane0"] - before > 0.1  # it ran most of half a second
    assert during["main"] >= 0 and during[NATIVE] >= 0


def test_a_tracker_child_shows_as_trackers_and_leaves_with_its_process():
    from edge_app.detect.detections import Detections
    from edge_app.track.processes import TrackerProcesses
    from edge_app.track.tracker import TrackerSettings

    processes = TrackerProcesses(1)
    try:
        tracker = processes.tracker("cam", TrackerSettings())
        tracker.update(Detections.empty(), 1.0)  # starts the child: it imports numpy and the tracker
        (pid,) = processes.pids()
        assert cpu_by_group()["trackers"] > 0
    finally:
        processes.close()
    assert pid not in [child.pid for child in multiprocessing.active_children()]  # no longer counted
