"""Speed on a line pair: the arithmetic with the times passed in, the interpolated crossing
times, and passages in either order (docs/analytics.md, "Speed")."""
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pytest

from edge_app.track.lines import Line, LineCounter, LineCrossing
from edge_app.track.speed import SpeedMeter, SpeedPair, SpeedReading, kmh_to_mph, speed_kmh

A = Line("a", (0.2, 0.0), (0.2, 1.0))
B = Line("b", (0.8, 0.0), (0.8, 1.0))
PAIR = SpeedPair("a", "b", distance_m=30.0, max_kmh=50.0)


@pytest.mark.parametrize("distance_m, first_s, second_s, expected_kmh", [
    (10.0, 100.0, 101.0, 36.0),          # 10 m/s
    (30.0, 0.0, 2.0, 54.0),
    (30.0, 1_796_290_950.25, 1_796_290_952.25, 54.0),  # Unix capture times
    (1.0, 5.0, 5.5, 7.2),
    (20.0, 3.0, 3.0, None),              # no time passed: no passage
    (20.0, 4.0, 3.0, None),              # time ran backwards
    (0.0, 1.0, 2.0, None),
])
def test_speed_is_distance_over_time_in_kmh(distance_m, first_s, second_s, expected_kmh):
    got = speed_kmh(distance_m, first_s, second_s)
    assert got == pytest.approx(expected_kmh) if expected_kmh is not None else got is None


@pytest.mark.parametrize("kmh, mph", [(0.0, 0.0), (1.609344, 1.0), (100.0, 62.137), (50.0, 31.069)])
def test_kmh_to_mph(kmh, mph):
    assert kmh_to_mph(kmh) == pytest.approx(mph, abs=1e-3)


def crossing(line: str, over_s: Optional[float], track_id: int = 7) -> LineCrossing:
    return LineCrossing(line, track_id, "car", "in", over_s)


@pytest.mark.parametrize("crossings, expected", [
    ([crossing("a", 10.0), crossing("b", 12.0)], [("b", "a", 54.0)]),
    ([crossing("b", 10.0), crossing("a", 11.0)], [("a", "b", 108.0)]),          # the other way
    ([crossing("a", 10.0)], []),                                               # one line only
    ([crossing("a", 10.0), crossing("a", 11.0), crossing("b", 13.0)], [("b", "a", 54.0)]),  # turned back: restarts
    ([crossing("a", None), crossing("b", 12.0)], []),                          # no time: nothing measured
    ([crossing("a", 10.0), crossing("b", 12.0, track_id=8)], []),              # another object
    ([crossing("a", 10.0), crossing("gate", 11.0), crossing("b", 12.0)], [("b", "a", 54.0)]),  # other lines ignored
])
def test_a_passage_is_one_line_then_the_other(crossings, expected):
    readings = SpeedMeter([PAIR]).observe(crossings)
    assert [(r.line, r.from_line, round(r.speed_kmh, 6)) for r in readings] == expected


@pytest.mark.parametrize("max_kmh, unit, kmh, over, mph", [
    (50.0, "kmh", 54.0, True, 33.554),
    (60.0, "mph", 54.0, False, 33.554),
    (None, "kmh", 54.0, False, 33.554),
])
def test_a_reading_knows_its_limit_and_unit(max_kmh, unit, kmh, over, mph):
    reading = SpeedReading("a", "b", "a", 7, "car", kmh, unit, max_kmh)
    assert reading.over_limit is over and reading.speed_mph == pytest.approx(mph, abs=1e-3)


def test_forgotten_tracks_start_again():
    meter = SpeedMeter([PAIR])
    meter.observe([crossing("a", 10.0)])
    assert len(meter) == 1
    meter.forget([7])
    assert len(meter) == 0 and meter.observe([crossing("b", 12.0)]) == []


@pytest.mark.parametrize("first, second, distance_m", [("a", "a", 10.0), ("a", "b", 0.0), ("a", "b", -3.0)])
def test_a_pair_is_two_lines_apart(first, second, distance_m):
    with pytest.raises(ValueError):
        SpeedPair(first, second, distance_m)


def drive(counter: LineCounter, path: Sequence[Tuple[float, float, float]], track_id: int = 7) -> List[LineCrossing]:
    out = []
    for x, y, ts in path:
        out += counter.update([track_id], ["car"], np.array([(x, y)]), ts)
    return out


@pytest.mark.parametrize("fps", [2.0, 5.0, 12.5, 30.0])
def test_crossing_times_are_interpolated_between_frames(fps):
    # 0.3 of the frame a second from x=0.05: over a at 0.5 s, over b at 2.5 s, whatever the frame rate.
    frames = [(0.05 + 0.3 * i / fps, 0.5, 1000.0 + i / fps) for i in range(int(3.2 * fps) + 1)]
    crossings = drive(LineCounter([A, B]), frames)
    assert [(c.line, c.direction) for c in crossings] == [("a", "out"), ("b", "out")]
    assert crossings[0].over_s == pytest.approx(1000.5) and crossings[1].over_s == pytest.approx(1002.5)
    readings = SpeedMeter([PAIR]).observe(crossings)
    assert len(readings) == 1 and readings[0].speed_kmh == pytest.approx(54.0)


def test_crossings_without_times_have_none():
    crossings = drive(LineCounter([A]), [(0.05 + 0.05 * i, 0.5, None) for i in range(10)])
    assert len(crossings) == 1 and crossings[0].over_s is None
