"""One stall rule for every watchdog: the camera's backend calls, the pipeline and the MQTT link."""
from __future__ import annotations

import pytest

from edge_app.capture.watchdog import BackendCall, BackendCalls
from edge_app.capture.backoff import watchdog_limit_s
from edge_app.config.schema import CaptureConfig
from edge_app.mqtt.link_stall_watch import LinkActivity, assess_link
from edge_app.pipeline.stall_watch import PipelineActivity, assess
from edge_app.process.stall import stalled


@pytest.mark.parametrize("now_s, last_progress_s, timeout_s, expected", [
    (100.0, 100.0, 10.0, False),
    (109.99, 100.0, 10.0, False),
    (110.0, 100.0, 10.0, True),  # reaching the timeout is a stall
    (500.0, 100.0, 10.0, True),
    (100.5, 100.0, 0.5, True),
    (99.0, 100.0, 10.0, False),  # progress read a moment after now
    (1e9, None, 10.0, False),  # nothing waits for progress
])
def test_stalled(now_s, last_progress_s, timeout_s, expected):
    assert stalled(now_s, last_progress_s, timeout_s) is expected


def _capture_stalled(waited_fraction: float) -> bool:
    capture = CaptureConfig(stall_timeout_s=20.0)
    limit_s = watchdog_limit_s("read", capture.stall_timeout_s, capture.open_timeout_s)
    calls = BackendCalls(capture)
    calls.current = BackendCall(generation=1, kind="read", started_mono_s=1000.0)
    return calls.stalled(1, 1000.0 + waited_fraction * limit_s) is not None


def _pipeline_stalled(waited_fraction: float) -> bool:
    return assess(PipelineActivity(True, True, None, 1000.0), 1000.0 + waited_fraction * 20.0, 20.0).stalled


def _link_stalled(waited_fraction: float) -> bool:
    return assess_link(LinkActivity(True, True, True, 3, 1000.0), 1000.0 + waited_fraction * 20.0, 20.0).stalled


@pytest.mark.parametrize("watchdog", [_capture_stalled, _pipeline_stalled, _link_stalled])
@pytest.mark.parametrize("waited_fraction, expected", [(0.975, False), (1.0, True), (1.025, True)])
def test_every_watchdog_draws_the_line_at_the_same_place(watchdog, waited_fraction, expected):
    # a camera's call was stalled on reaching its limit, the pipeline and the link only past theirs
    assert watchdog(waited_fraction) is expected
