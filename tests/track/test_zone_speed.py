"""Speed through a zone of known length: border passages interpolated between frames, readings
when the zone tracker says the object left (docs/analytics.md, "Speed")."""
import numpy as np
import pytest

from edge_app.track.geometry import polygon_edges
from edge_app.track.zone_speed import SpeedZone, ZoneSpeedMeter, border_passage
from edge_app.track.zones import Zone, ZoneTracker

SQUARE = ((0.3, 0.2), (0.7, 0.2), (0.7, 0.8), (0.3, 0.8))
ROAD = SpeedZone("road", SQUARE, distance_m=20.0, max_kmh=50.0)


@pytest.mark.parametrize("start, end, first, expected", [
    ((0.1, 0.5), (0.5, 0.5), True, 0.5),     # in over the left edge, halfway
    ((0.5, 0.5), (0.9, 0.5), True, 0.5),     # out over the right edge
    ((0.1, 0.5), (0.9, 0.5), True, 0.25),    # through: the first passage
    ((0.1, 0.5), (0.9, 0.5), False, 0.75),   # and the last
    ((0.4, 0.5), (0.6, 0.5), True, None),    # inside all along
    ((0.0, 0.0), (0.1, 0.1), True, None),
])
def test_border_passage(start, end, first, expected):
    got = border_passage(polygon_edges(SQUARE), np.array(start), np.array(end), first)
    assert got == pytest.approx(expected) if expected is not None else got is None


def drive(meter, fps, speed_per_s, y=0.5, x0=0.05, x1=0.95, wobble=0.0, track_id=3, label="car"):
    zones = ZoneTracker([Zone("road", SQUARE)])
    readings, i = [], 0
    while True:
        t_s = i / fps
        x = x0 + speed_per_s * t_s + (wobble if i % 2 else -wobble)
        if x0 + speed_per_s * t_s > x1:
            break
        points = np.array([[x, y]])
        changes = zones.update([track_id], [label], points, 1_800_000_000.0 + t_s)
        meter.update([track_id], points, 1_800_000_000.0 + t_s)
        readings += meter.readings(changes)
        i += 1
    readings += meter.readings(zones.forget([track_id]))
    meter.forget([track_id])
    return readings


@pytest.mark.parametrize("fps", [2.0, 5.0, 10.0, 30.0])
def test_a_car_through_the_zone_gets_its_speed_at_any_rate(fps):
    # 0.1 of the frame a second: 0.4 of it (20 m) in 4 s: 18 km/h.
    readings = drive(ZoneSpeedMeter([ROAD]), fps, 0.1)
    assert len(readings) == 1
    assert readings[0].speed_kmh == pytest.approx(18.0) and readings[0].pair == "road" and not readings[0].over_limit


def test_wobbling_on_the_border_moves_the_reading_by_the_wobble_only():
    readings = drive(ZoneSpeedMeter([ROAD]), 10.0, 0.1, wobble=0.004)
    assert len(readings) == 1 and readings[0].speed_kmh == pytest.approx(18.0, rel=0.03)


@pytest.mark.parametrize("x0, x1", [(0.4, 0.95), (0.05, 0.6)])
def test_no_reading_without_both_ways(x0, x1):
    # first seen inside; or the track ends inside
    meter = ZoneSpeedMeter([ROAD])
    assert drive(meter, 10.0, 0.1, x0=x0, x1=x1) == [] and len(meter) == 0


def test_a_fast_car_is_over_the_limit():
    readings = drive(ZoneSpeedMeter([ROAD]), 10.0, 0.4)   # 20 m in 1 s: 72 km/h
    assert readings[0].speed_kmh == pytest.approx(72.0) and readings[0].over_limit


def test_a_zone_needs_a_length():
    with pytest.raises(ValueError):
        SpeedZone("road", SQUARE, 0.0)
