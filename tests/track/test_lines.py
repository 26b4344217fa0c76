"""Tripwire crossings: the documented direction rule, hysteresis, and the segment's extent."""
from typing import List, Sequence, Tuple

import numpy as np
import pytest

from edge_app.track.lines import Line, LineCounter, LineCrossing

GATE = Line("gate", (0.5, 0.0), (0.5, 1.0))


def walk(counter: LineCounter, path: Sequence[Tuple[float, float]], track_id: int = 7, label: str = "person") -> List[LineCrossing]:
    out = []
    for point in path:
        out += counter.update([track_id], [label], np.array([point]))
    return out


def directions(crossings: List[LineCrossing]) -> List[str]:
    return [c.direction for c in crossings]


def straight(x0, y0, x1, y1, steps=20):
    return [(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps) for i in range(steps + 1)]


def test_spec_example_right_half_to_left_half_is_in():
    crossings = walk(LineCounter([GATE]), straight(0.8, 0.5, 0.2, 0.5))
    assert crossings == [LineCrossing("gate", 7, "person", "in")]


@pytest.mark.parametrize("line, path, expected", [
    (GATE, straight(0.2, 0.5, 0.8, 0.5), ["out"]),                           # left to right
    (Line("gate", (0.5, 1.0), (0.5, 0.0)), straight(0.8, 0.5, 0.2, 0.5), ["out"]),  # reversed line flips it
    (Line("h", (0.0, 0.5), (1.0, 0.5)), straight(0.5, 0.2, 0.5, 0.8), ["in"]),    # s = cy - 0.5: top to bottom is in
    (Line("h", (0.0, 0.5), (1.0, 0.5)), straight(0.5, 0.8, 0.5, 0.2), ["out"]),
    (Line("diag", (0.0, 0.0), (1.0, 1.0)), straight(0.8, 0.2, 0.2, 0.8), ["in"]),
    (Line("tilt", (0.3, 0.1), (0.6, 0.9)), straight(0.9, 0.5, 0.1, 0.5), ["in"]),   # P1 above P2, right to left
    (GATE, straight(0.8, 0.5, 0.2, 0.5) + straight(0.2, 0.5, 0.8, 0.5), ["in", "out"]),
    (GATE, straight(0.8, 0.5, 0.6, 0.5), []),                                # never reaches the line
    (GATE, straight(0.8, 0.5, 0.51, 0.5), []),                               # stops inside the band
    (GATE, [(0.8, 0.5), (0.2, 0.5)], ["in"]),                                # one big step over it
])
def test_direction(line, path, expected):
    assert directions(walk(LineCounter([line]), path)) == expected


@pytest.mark.parametrize("amplitude, frames", [(0.005, 40), (0.015, 40), (0.019, 200)])
def test_jitter_on_the_line_never_counts(amplitude, frames):
    rng = np.random.default_rng(1)
    path = straight(0.8, 0.5, 0.5, 0.5)
    path += [(0.5 + amplitude * (1 if i % 2 else -1) * rng.uniform(0.5, 1), 0.5) for i in range(frames)]
    assert directions(walk(LineCounter([GATE], band=0.02), path)) == []


def test_jitter_on_the_line_then_leaving_counts_once():
    path = straight(0.8, 0.5, 0.5, 0.5)
    path += [(0.5 + 0.015 * (1 if i % 2 else -1), 0.5) for i in range(30)]
    path += straight(0.5, 0.5, 0.2, 0.5)
    assert directions(walk(LineCounter([GATE], band=0.02), path)) == ["in"]


RIGHT, LEFT = 0.8, 0.2          # clearly on either side of GATE (s < 0 right, s > 0 left)
ON_RIGHT, ON_LEFT = 0.51, 0.49  # within the 2 % band, just right and just left of the line


def jitter(centre: float, amplitude: float, frames: int) -> List[Tuple[float, float]]:
    return [(centre + amplitude * (1 if i % 2 else -1), 0.5) for i in range(frames)]


@pytest.mark.parametrize("path, expected", [
    # First seen on the line: it was never clearly on a side, so leaving the band is no crossing,
    # whichever side it leaves to, whichever side of the line it was nearest to.
    pytest.param(straight(ON_RIGHT, 0.5, RIGHT, 0.5), [], id="first-seen-on-line-leaves-to-its-side"),
    pytest.param(straight(ON_RIGHT, 0.5, LEFT, 0.5), [], id="first-seen-on-line-leaves-to-the-other-side"),
    pytest.param(straight(ON_LEFT, 0.5, RIGHT, 0.5), [], id="first-seen-left-of-line-leaves-right"),
    pytest.param([(0.5, 0.5)] + straight(0.5, 0.5, LEFT, 0.5), [], id="first-seen-exactly-on-line"),
    pytest.param(jitter(0.5, 0.015, 30) + straight(0.5, 0.5, LEFT, 0.5), [], id="first-seen-jittering-on-line"),
    # ...but once it has been clearly on a side, reaching the other side clearly is a crossing.
    pytest.param(straight(ON_RIGHT, 0.5, RIGHT, 0.5) + straight(RIGHT, 0.5, LEFT, 0.5), ["in"],
                 id="first-seen-on-line-steps-back-then-crosses"),
    pytest.param(straight(ON_RIGHT, 0.5, LEFT, 0.5) + straight(LEFT, 0.5, RIGHT, 0.5), ["out"],
                 id="first-seen-on-line-goes-left-then-crosses-back"),
    # Jitter on the line, from a clear side, counts nothing until the far side is reached clearly.
    pytest.param(straight(RIGHT, 0.5, 0.5, 0.5) + jitter(0.5, 0.019, 60), [], id="jitter-on-line"),
    pytest.param(straight(RIGHT, 0.5, 0.5, 0.5) + jitter(0.5, 0.019, 60) + straight(0.5, 0.5, RIGHT, 0.5), [],
                 id="jitter-on-line-then-back"),
    pytest.param(straight(RIGHT, 0.5, 0.5, 0.5) + jitter(0.5, 0.019, 60) + straight(0.5, 0.5, LEFT, 0.5), ["in"],
                 id="jitter-on-line-then-across"),
    # Jitter at the outer edge of the band on the far side: one crossing, not one per wobble.
    pytest.param(straight(RIGHT, 0.5, 0.48, 0.5) + jitter(0.48, 0.003, 40), ["in"], id="jitter-at-band-edge"),
    # Back and forth over the line inside the band is no crossing; leaving it on the far side is.
    pytest.param(straight(RIGHT, 0.5, ON_LEFT, 0.5) + straight(ON_LEFT, 0.5, RIGHT, 0.5), [], id="dips-over-and-back"),
    pytest.param((straight(RIGHT, 0.5, ON_LEFT, 0.5) + straight(ON_LEFT, 0.5, ON_RIGHT, 0.5)) * 5
                 + straight(ON_RIGHT, 0.5, LEFT, 0.5), ["in"], id="back-and-forth-then-across"),
    # Across, a wobble back into the band, and on: still one crossing.
    pytest.param(straight(RIGHT, 0.5, LEFT, 0.5) + straight(LEFT, 0.5, ON_LEFT, 0.5) + straight(ON_LEFT, 0.5, LEFT, 0.5),
                 ["in"], id="across-then-back-into-band"),
    # A second crossing counts only after moving clearly away to the other side again.
    pytest.param(straight(RIGHT, 0.5, LEFT, 0.5) + straight(LEFT, 0.5, ON_RIGHT, 0.5)
                 + straight(ON_RIGHT, 0.5, LEFT, 0.5), ["in"], id="second-try-without-moving-clearly-away"),
    pytest.param(straight(RIGHT, 0.5, LEFT, 0.5) + straight(LEFT, 0.5, RIGHT, 0.5) + straight(RIGHT, 0.5, LEFT, 0.5),
                 ["in", "out", "in"], id="second-crossing-after-moving-clearly-away"),
])
def test_hysteresis_band(path, expected):
    assert directions(walk(LineCounter([GATE], band=0.02), path)) == expected


def test_a_point_that_stays_on_one_side_through_the_band_counts_nothing():
    path = straight(0.8, 0.5, 0.505, 0.5) + straight(0.505, 0.5, 0.9, 0.5)
    assert directions(walk(LineCounter([GATE]), path)) == []


@pytest.mark.parametrize("segment, path, expected", [
    # Crossing the infinite line below the segment's end is no crossing.
    (Line("short", (0.5, 0.0), (0.5, 0.4)), straight(0.8, 0.7, 0.2, 0.7), []),
    (Line("short", (0.5, 0.0), (0.5, 0.4)), straight(0.8, 0.3, 0.2, 0.3), ["in"]),
    (Line("short", (0.5, 0.6), (0.5, 1.0)), straight(0.8, 0.5, 0.2, 0.5), []),
    # Round the end of the segment and back through it: one count.
    (Line("short", (0.5, 0.0), (0.5, 0.4)),
     straight(0.8, 0.3, 0.8, 0.7) + straight(0.8, 0.7, 0.2, 0.7) + straight(0.2, 0.7, 0.2, 0.3) + straight(0.2, 0.3, 0.8, 0.3),
     ["out"]),
])
def test_only_crossings_through_the_segment_count(segment, path, expected):
    assert directions(walk(LineCounter([segment]), path)) == expected


def test_recrossing_after_moving_clearly_away_counts_again():
    there_and_back = straight(0.8, 0.5, 0.2, 0.5) + straight(0.2, 0.5, 0.8, 0.5)
    assert directions(walk(LineCounter([GATE]), there_and_back * 3)) == ["in", "out"] * 3


def test_each_track_counts_on_its_own():
    counter = LineCounter([GATE])
    out = []
    for (ax, ay), (bx, by) in zip(straight(0.8, 0.3, 0.2, 0.3), straight(0.2, 0.6, 0.8, 0.6)):
        out += counter.update([1, 2, -1], ["person", "car", "person"], np.array([[ax, ay], [bx, by], [ax, by]]))
    assert sorted((c.track_id, c.label, c.direction) for c in out) == [(1, "person", "in"), (2, "car", "out")]


def test_labels_filter_the_objects_that_count():
    counter = LineCounter([Line("gate", (0.5, 0.0), (0.5, 1.0), frozenset({"car"}))])
    assert walk(counter, straight(0.8, 0.5, 0.2, 0.5), label="person") == []
    assert directions(walk(counter, straight(0.8, 0.5, 0.2, 0.5), track_id=8, label="car")) == ["in"]


def test_several_lines_and_forget():
    counter = LineCounter([GATE, Line("h", (0.0, 0.5), (1.0, 0.5))])
    crossings = walk(counter, straight(0.8, 0.2, 0.2, 0.8))
    assert sorted((c.line, c.direction) for c in crossings) == [("gate", "in"), ("h", "in")]
    counter.forget([7])
    assert len(counter) == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(lines=[Line("a", (0, 0), (1, 1)), Line("a", (0, 1), (1, 0))]), "unique"),
    (dict(lines=[GATE], band=1.5), "band"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LineCounter(**kwargs)


def test_a_line_needs_two_points():
    with pytest.raises(ValueError, match="two different points"):
        Line("dot", (0.5, 0.5), (0.5, 0.5))


def test_misaligned_inputs_are_refused():
    with pytest.raises(ValueError, match="same length"):
        LineCounter([GATE]).update([1, 2], ["person"], np.zeros((2, 2)))
