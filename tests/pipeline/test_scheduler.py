"""BatchScheduler: batching, timeout, round-robin fairness and fps_limit, with time passed in."""
from collections import Counter

import pytest

from edge_app.pipeline.scheduler import BatchScheduler


def make(max_batch=4, timeout_s=0.01, cams=("a", "b", "c", "d"), fps=None):
    sched = BatchScheduler(max_batch=max_batch, batch_timeout_s=timeout_s)
    sched.set_cameras({c: (fps or {}).get(c, 0) for c in cams})
    return sched


@pytest.mark.parametrize(
    "ready, now, expected_take, expected_wait",
    [
        ({}, 0.0, (), None),  # nothing ready: wait for a frame
        ({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}, 0.0, ("a", "b", "c", "d"), None),  # full batch at once
        ({"a": 0.0}, 0.001, (), pytest.approx(0.009)),  # partial batch waits for the rest
        ({"a": 0.0, "b": 0.005}, 0.0101, ("a", "b"), None),  # oldest waited the timeout: go
    ],
)
def test_plan_fill_and_timeout(ready, now, expected_take, expected_wait):
    plan = make().plan(ready, now)
    assert plan.take == expected_take
    assert plan.wait_s == expected_wait


def test_partial_batch_goes_at_once_when_every_camera_is_in_it():
    sched = make(max_batch=8, cams=("a", "b"))
    assert sched.plan({"a": 0.0, "b": 0.0}, 0.0).take == ("a", "b")


def test_batch_never_exceeds_max_batch():
    sched = make(max_batch=2)
    assert len(sched.plan({c: 0.0 for c in "abcd"}, 0.0).take) == 2


def test_round_robin_serves_every_camera_equally():
    sched = make(max_batch=2, cams=("a", "b", "c", "d", "e"))
    served = Counter()
    now = 0.0
    for _ in range(100):
        plan = sched.plan({c: now for c in "abcde"}, now + 1)
        served.update(plan.take)
        sched.mark_analysed(plan.take, now + 1)
        now += 1
    assert set(served.values()) == {40}


def test_fps_limit_holds_a_camera_back_and_says_how_long():
    sched = make(max_batch=1, cams=("a",), fps={"a": 2.0})
    sched.mark_analysed(["a"], 10.0)
    plan = sched.plan({"a": 10.1}, 10.1)
    assert plan.take == ()
    assert plan.wait_s == pytest.approx(0.35)  # the capture's schedule: up to a tenth of an interval early
    assert sched.plan({"a": 10.1}, 10.44).take == ()
    assert sched.plan({"a": 10.1}, 10.45).take == ("a",)


def test_fps_limited_camera_does_not_block_others():
    sched = make(max_batch=2, cams=("a", "b"), fps={"a": 1.0})
    sched.mark_analysed(["a"], 0.0)
    plan = sched.plan({"a": 0.2, "b": 0.2}, 0.2 + 0.02)
    assert plan.take == ("b",)


def test_unknown_cameras_are_ignored_and_cameras_can_change():
    sched = make(cams=("a",))
    assert sched.plan({"zzz": 0.0}, 1.0).take == ()
    sched.set_cameras({"a": 0, "b": 0})
    assert sched.plan({"a": 0.0, "b": 0.0}, 0.0).take == ("a", "b")
