"""fps_limit end to end with the time passed in: a camera's capture (early drop into a one-frame
slot, or every frame of a ``realtime: false`` file) feeding the batch scheduler and a detector
that takes a while. Each camera has its limit kept in one place, by one rule."""
from __future__ import annotations

from typing import List, Sequence

import pytest

from edge_app.capture.buffer import BufferPolicy
from edge_app.capture.early_drop import EarlyDrop, capture_fps_limit, scheduler_fps_limit
from edge_app.pipeline.scheduler import BatchScheduler

STEP_S = 0.001


class _Run:
    def __init__(self) -> None:
        self.analysed_s: List[float] = []
        self.waits_s: List[float] = []  # from a frame's arrival until its batch
        self.replaced = 0  # frames kept by the capture, then replaced in the slot before a batch took them


def _simulate(policy: BufferPolicy, fps_limit: float, camera_fps: float, seconds: float,
              latency_s: Sequence[float] = (0.03,), jitter_s: float = 0.004) -> _Run:
    capture = EarlyDrop(capture_fps_limit(policy, fps_limit))
    scheduler = BatchScheduler(max_batch=1, batch_timeout_s=0.0)
    scheduler.set_cameras({"cam": scheduler_fps_limit(policy, fps_limit)})
    arrivals = [k / camera_fps + (jitter_s if k % 2 else -jitter_s) for k in range(1, int(camera_fps * seconds))]
    waiting: List[float] = []  # frames handed on, not yet batched
    run = _Run()
    busy_until_s, next_arrival = 0.0, 0
    for tick in range(int(seconds / STEP_S) + 1):
        now_s = tick * STEP_S
        while next_arrival < len(arrivals) and arrivals[next_arrival] <= now_s:
            arrived_s = arrivals[next_arrival]
            next_arrival += 1
            if policy is BufferPolicy.WAIT:
                waiting.append(arrived_s)  # a file read at its own pace loses no frame
            elif capture.keep(arrived_s):
                run.replaced += len(waiting)
                waiting = [arrived_s]
        if now_s < busy_until_s or not waiting:
            continue
        plan = scheduler.plan({"cam": waiting[0]}, now_s)
        if plan.take:
            run.waits_s.append(now_s - waiting.pop(0))
            run.analysed_s.append(now_s)
            scheduler.mark_analysed(plan.take, now_s)
            busy_until_s = now_s + latency_s[len(run.analysed_s) % len(latency_s)]
    return run


def _rate(run: _Run, seconds: float) -> float:
    return len(run.analysed_s) / seconds


@pytest.mark.parametrize("policy", [BufferPolicy.DROP_OLDEST, BufferPolicy.WAIT])
@pytest.mark.parametrize("fps_limit, camera_fps, expected_per_s", [(5, 30, 5), (10, 30, 10), (7, 25, 7), (0, 30, 30),
                                                                   (60, 30, 30)])
def test_the_analysed_rate_is_the_limit(policy, fps_limit, camera_fps, expected_per_s):
    run = _simulate(policy, fps_limit, camera_fps, seconds=10.0)
    assert _rate(run, 10.0) == pytest.approx(expected_per_s, rel=0.05)


def test_a_slow_batch_does_not_hold_a_live_camera_back_for_good():
    # one batch in 20 takes 350 ms. A second schedule in the scheduler, counted from when a batch
    # was taken, held every later frame back by what that batch overran (median wait 112 ms, a
    # kept frame replaced in the slot); the capture's schedule, counted from arrivals, does not.
    run = _simulate(BufferPolicy.DROP_OLDEST, 5, 30, seconds=10.0, latency_s=[0.03] * 19 + [0.35])
    assert _rate(run, 10.0) == pytest.approx(5, rel=0.05)
    assert sorted(run.waits_s)[len(run.waits_s) // 2] < 0.01
    assert run.replaced == 0


@pytest.mark.parametrize("policy, expected", [(BufferPolicy.DROP_OLDEST, (5.0, 0.0)), (BufferPolicy.WAIT, (0.0, 5.0))])
def test_one_place_keeps_each_cameras_limit(policy, expected):
    assert (capture_fps_limit(policy, 5.0), scheduler_fps_limit(policy, 5.0)) == expected


