"""WorkerThread: one named daemon thread, started once, stopped any number of times within a bound."""
from __future__ import annotations

import threading

import pytest

from edge_app.process.worker import WorkerThread


def test_the_thread_runs_named_and_as_a_daemon():
    seen = {}
    done = threading.Event()

    def run():
        seen["name"], seen["daemon"] = threading.current_thread().name, threading.current_thread().daemon
        done.set()

    worker = WorkerThread(run, "unit:worker")
    assert worker.start() is True
    assert done.wait(2.0)
    assert seen == {"name": "unit:worker", "daemon": True}
    assert worker.stop(2.0) is True


@pytest.mark.parametrize("calls, started", [
    (["start"], 1),
    (["start", "start"], 1),
    (["start", "stop", "start"], 1),
    (["stop", "start"], 0),
    (["stop", "stop"], 0),
])
def test_start_and_stop_are_idempotent(calls, started):
    runs = []
    box = [None]

    def run():
        runs.append(1)
        box[0].stopping.wait()

    worker = box[0] = WorkerThread(run, "unit:idempotent")
    for call in calls:
        if call == "start":
            worker.start()
        else:
            assert worker.stop(2.0) is True
    assert worker.stop(2.0) is True
    assert len(runs) == started
    assert not worker.is_alive()


def test_stop_wakes_a_loop_that_waits_on_its_own_condition():
    cond = threading.Condition()
    box = [None]

    def run():
        with cond:
            while not box[0].stopping.is_set():
                cond.wait()  # no timeout: only the wake ends the wait

    def notify():
        with cond:
            cond.notify_all()

    worker = box[0] = WorkerThread(run, "unit:cond", wake=notify)
    worker.start()
    assert worker.stop(2.0) is True


def test_stop_returns_false_after_its_timeout_when_the_loop_does_not_end():
    release = threading.Event()
    worker = WorkerThread(lambda: release.wait(5.0), "unit:stuck")
    worker.start()
    assert worker.stop(0.05) is False
    assert worker.is_alive()
    release.set()
    assert worker.stop(2.0) is True


def test_a_loop_may_stop_its_own_worker_without_joining_itself():
    box = [None]
    answers = []

    def run():
        answers.append(box[0].stop(1.0))

    worker = box[0] = WorkerThread(run, "unit:self-stop")
    worker.start()
    assert worker.stop(2.0) is True
    assert answers == [False]  # it was still running when it asked
