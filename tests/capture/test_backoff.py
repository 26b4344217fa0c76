import pytest

from edge_app.capture.backoff import reconnect_delay_s, watchdog_limit_s
from edge_app.config.schema import CaptureConfig


def test_default_delays_double_from_one_second_to_thirty():
    cfg = CaptureConfig()
    delays = [reconnect_delay_s(n, cfg.backoff_initial_s, cfg.backoff_max_s) for n in range(1, 9)]
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]


@pytest.mark.parametrize("failures,expected", [(0, 0.0), (-3, 0.0), (1, 0.25), (2, 0.5), (3, 1.0), (4, 1.5), (10_000, 1.5)])
def test_custom_delays(failures, expected):
    assert reconnect_delay_s(failures, initial_s=0.25, max_s=1.5) == expected


def test_watchdog_gives_the_backend_timeouts_a_head_start():
    assert watchdog_limit_s("read", stall_timeout_s=10, open_timeout_s=4) == 15
    assert watchdog_limit_s("open", stall_timeout_s=10, open_timeout_s=4) == 6
    assert watchdog_limit_s("read", stall_timeout_s=0.5, open_timeout_s=4) == 1.5


def test_a_long_outage_caps_the_delay_at_a_fifth_of_its_age():
    cfg = CaptureConfig()
    # Doubling alone would wait 16 s at the fifth failure; 20 s into the outage the cap is 4 s.
    assert reconnect_delay_s(5, cfg.backoff_initial_s, cfg.backoff_max_s, outage_s=20.0) == 4.0
    assert reconnect_delay_s(5, cfg.backoff_initial_s, cfg.backoff_max_s, outage_s=2.0) == 1.0  # never below initial
    assert reconnect_delay_s(2, cfg.backoff_initial_s, cfg.backoff_max_s, outage_s=100.0) == 2.0  # doubling is lower
    assert reconnect_delay_s(40, cfg.backoff_initial_s, cfg.backoff_max_s, outage_s=86400.0) == 30.0  # a day: the max


def test_a_camera_back_after_t_seconds_waits_at_most_a_fifth_of_t_plus_one_step():
    """Simulate the retry times of an outage of each length: the first attempt after the return
    comes within max(initial, 20 % of the outage) of it."""
    cfg = CaptureConfig()
    for outage_s in (5.0, 12.0, 20.0, 45.0, 90.0):
        now_s, failures = 0.0, 1
        while True:
            now_s += reconnect_delay_s(failures, cfg.backoff_initial_s, cfg.backoff_max_s, outage_s=now_s)
            if now_s >= outage_s:
                break
            failures += 1
        assert now_s - outage_s <= max(cfg.backoff_initial_s, 0.2 * now_s) + 1e-9, outage_s
        assert now_s - outage_s <= min(cfg.backoff_max_s, 0.25 * outage_s + 1.0), outage_s
