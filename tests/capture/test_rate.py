"""RateMeter: one meter for capture fps and analysed fps."""
import pytest

from edge_app.capture.rate import RateMeter


def test_rate_meter_sliding_window():
    meter = RateMeter(window_s=2.0)
    assert meter.rate(0.0) == 0.0
    for i in range(21):
        meter.tick(i * 0.1)  # 10/s for 2 s
    assert meter.rate(2.0) == pytest.approx(10.0, rel=0.01)
    assert meter.rate(3.0) < 10.0  # no frames for a second: the rate falls
    assert meter.rate(10.0) == 0.0


def test_a_meter_keeps_a_bounded_number_of_events():
    meter = RateMeter(window_s=60.0, max_events=10)
    for i in range(1000):
        meter.tick(i * 0.01)
    assert meter.rate(9.99) == pytest.approx(100.0, rel=0.01)
