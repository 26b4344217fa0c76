import pytest

from edge_app.capture.backoff import is_stalled, reconnect_delay_s, watchdog_limit_s
from edge_app.config.schema import CaptureConfig


def test_default_delays_double_from_one_second_to_thirty():
    cfg = CaptureConfig()
    delays = [reconnect_delay_s(n, cfg.backoff_initial_s, cfg.backoff_max_s) for n in range(1, 9)]
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]


@pytest.mark.parametrize("failures,expected", [(0, 0.0), (-3, 0.0), (1, 0.25), (2, 0.5), (3, 1.0), (4, 1.5), (10_000, 1.5)])
def test_custom_delays(failures, expected):
    assert reconnect_delay_s(failures, initial_s=0.25, max_s=1.5) == expected


@pytest.mark.parametrize(
    "last_s,now_s,timeout_s,stalled",
    [(100.0, 100.0, 10.0, False), (100.0, 109.99, 10.0, False), (100.0, 110.0, 10.0, True), (100.0, 500.0, 10.0, True),
     (100.0, 100.5, 0.5, True), (100.0, 99.0, 10.0, False)],
)
def test_is_stalled(last_s, now_s, timeout_s, stalled):
    assert is_stalled(last_s, now_s, timeout_s) is stalled


def test_watchdog_gives_the_backend_timeouts_a_head_start():
    assert watchdog_limit_s("read", stall_timeout_s=10, open_timeout_s=4) == 15
    assert watchdog_limit_s("open", stall_timeout_s=10, open_timeout_s=4) == 6
    assert watchdog_limit_s("read", stall_timeout_s=0.5, open_timeout_s=4) == 1.5
