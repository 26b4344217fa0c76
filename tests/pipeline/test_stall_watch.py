"""Stall detection and rate-limited error logs, with the time passed in."""
import logging

from edge_app.pipeline.errorlog import RateLimitedErrorLog
from edge_app.pipeline.stall_watch import ActivityTracker, PipelineActivity, assess


def activity(**overrides) -> PipelineActivity:
    values = dict(running=True, gather_alive=True, last_batch_s=None, work_since_s=None)
    values.update(overrides)
    return PipelineActivity(**values)


def test_an_idle_pipeline_is_not_stalled_however_long_it_waits():
    health = assess(activity(last_batch_s=100.0), now_s=10_000.0, stall_after_s=20)
    assert not health.stalled and health.reason is None and health.last_batch_age_s == 9900.0


def test_work_waiting_longer_than_the_limit_is_a_stall():
    assert not assess(activity(last_batch_s=50.0, work_since_s=100.0), now_s=119.9, stall_after_s=20).stalled
    health = assess(activity(last_batch_s=50.0, work_since_s=100.0, last_error="boom"), now_s=121.0, stall_after_s=20)
    assert health.stalled and "no batch completed for 21 s" in health.reason and "boom" in health.reason
    assert health.last_batch_age_s == 71.0


def test_a_dead_gather_thread_is_a_stall_at_once_but_a_stopped_pipeline_is_not():
    health = assess(activity(gather_alive=False), now_s=1.0)
    assert health.stalled and "thread has stopped" in health.reason
    assert not assess(activity(running=False, gather_alive=False, work_since_s=0.0), now_s=1000.0).stalled


def test_tracker_a_completed_batch_clears_waiting_work_and_failures_count_as_work():
    tracker = ActivityTracker()
    tracker.work_taken(10.0)
    tracker.work_taken(11.0)
    assert tracker.snapshot(True, True).work_since_s == 10.0, "the oldest work counts"
    tracker.batch_done(12.0)
    snap = tracker.snapshot(True, True)
    assert snap.work_since_s is None and snap.last_batch_s == 12.0
    tracker.failed(13.0, "decoding failed")
    snap = tracker.snapshot(True, True)
    assert snap.work_since_s == 13.0 and snap.last_error == "decoding failed"
    assert assess(snap, now_s=40.0, stall_after_s=20).stalled


class Clock:
    def __init__(self):
        self.now_s = 0.0

    def __call__(self):
        return self.now_s


def _raise_and_log(errors: RateLimitedErrorLog, kind: str) -> bool:
    try:
        raise ValueError("bad frame")
    except ValueError:
        return errors.exception(kind, "step %s failed", kind)


def test_error_log_logs_a_kind_once_per_interval_and_summarises_repeats(caplog):
    clock = Clock()
    errors = RateLimitedErrorLog(logging.getLogger("test.errorlog"), interval_s=60, clock=clock)
    assert _raise_and_log(errors, "a")
    for _ in range(9):
        clock.now_s += 1
        assert not _raise_and_log(errors, "a")
    assert _raise_and_log(errors, "b"), "another kind is logged at once"
    clock.now_s = 61.0
    assert _raise_and_log(errors, "a")
    lines = [r.getMessage() for r in caplog.records if r.name == "test.errorlog"]
    assert lines == ["step a failed", "step b failed", "step a failed (and 9 more times in the last 60 s)"]
    assert all(r.exc_info for r in caplog.records if r.name == "test.errorlog")
    assert errors.total == 12 and errors.last_message == "step a failed"
