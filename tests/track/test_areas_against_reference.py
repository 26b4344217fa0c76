"""Zones and lines over whole arrays give what the per-track logic gave, change for change.

Random walks of tracks that appear, wander across zone borders and lines (jittering near them),
change labels' zones and end; the array versions and the reference model of
tests/track/reference_areas.py are fed the same frames and must return the same changes,
crossings and occupants in the same order.
"""
import numpy as np
import pytest

from edge_app.track.lines import Line, LineCounter
from edge_app.track.zones import Zone, ZoneTracker
from tests.track.reference_areas import ReferenceLineCounter, ReferenceZoneTracker

LABELS = ("person", "car", "bus")
ZONES = [Zone("left", ((0, 0), (0.5, 0), (0.5, 1), (0, 1))),
         Zone("cars", ((0.2, 0.2), (0.8, 0.2), (0.8, 0.8), (0.2, 0.8)), frozenset({"car", "bus"})),
         Zone("triangle", ((0.1, 0.9), (0.9, 0.9), (0.5, 0.1)))]
LINES = [Line("middle", (0.5, 0.0), (0.5, 1.0)), Line("short", (0.3, 0.3), (0.7, 0.4), frozenset({"person"})),
         Line("floor", (0.0, 0.7), (1.0, 0.7))]


def frames(seed: int, count: int = 300):
    """(ids, labels, points, removed) per frame: up to 12 tracks at once, some untracked boxes."""
    rng = np.random.default_rng(seed)
    live = {}  # id -> [label, point, velocity]
    next_id = 1
    for _ in range(count):
        removed = [t for t in list(live) if rng.random() < 0.03]
        for t in removed:
            del live[t]
        while len(live) < 12 and rng.random() < 0.3:
            live[next_id] = [LABELS[rng.integers(3)], rng.random(2), rng.normal(0, 0.02, 2)]
            next_id += 1
        ids, labels, points = [], [], []
        for t, (label, point, velocity) in live.items():
            point += velocity + rng.normal(0, 0.01, 2)  # jitter: borders and bands must hold it
            np.clip(point, 0.0, 1.0, out=point)
            if rng.random() < 0.9:  # a track missing from a frame keeps its state
                ids.append(t)
                labels.append(label)
                points.append(point.copy())
        for _ in range(int(rng.integers(0, 3))):  # untracked detections
            ids.append(-1)
            labels.append(LABELS[rng.integers(3)])
            points.append(rng.random(2))
        order = rng.permutation(len(ids))
        yield ([ids[i] for i in order], [labels[i] for i in order], np.array([points[i] for i in order]).reshape(-1, 2),
               removed)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_frames", [1, 3])
def test_zones_agree_with_the_per_track_logic(seed, min_frames):
    ours, reference = ZoneTracker(ZONES, min_frames), ReferenceZoneTracker(ZONES, min_frames)
    changes = 0
    for ids, labels, points, removed in frames(seed):
        got = ours.update(ids, labels, points) + ours.forget(removed)
        assert got == reference.update(ids, labels, points) + reference.forget(removed)
        assert list(ours.occupants().items()) == list(reference.occupants().items())
        changes += len(got)
    assert changes > 20  # the walks do enter and leave


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("band", [0.0, 0.02])
def test_lines_agree_with_the_per_track_logic(seed, band):
    ours, reference = LineCounter(LINES, band), ReferenceLineCounter(LINES, band)
    crossings = 0
    for ids, labels, points, removed in frames(seed):
        got = ours.update(ids, labels, points)
        assert got == reference.update(ids, labels, points)
        crossings += len(got)
        ours.forget(removed)
        reference.forget(removed)
    assert crossings > 5  # the walks do cross


def frame_times(seed: int, count: int = 300):
    """Capture times, Unix seconds, 0.05 to 0.4 s apart: some steps settle a zone change over
    ``min_span_s`` (0.5 s) in two observations, others need ``min_frames``."""
    rng = np.random.default_rng(1000 + seed)
    return (1_796_290_950.0 + np.cumsum(rng.uniform(0.05, 0.4, count))).tolist()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_frames", [1, 3, 5])
def test_zone_change_times_agree_with_the_per_track_logic(seed, min_frames):
    ours, reference = ZoneTracker(ZONES, min_frames), ReferenceZoneTracker(ZONES, min_frames)
    timed = 0
    for (ids, labels, points, removed), ts in zip(frames(seed), frame_times(seed)):
        got = ours.update(ids, labels, points, ts) + ours.forget(removed)
        assert got == reference.update(ids, labels, points, ts) + reference.forget(removed)
        assert list(ours.occupants().items()) == list(reference.occupants().items())
        timed += sum(change.at_s is not None for change in got)
    assert timed > 20


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("band", [0.0, 0.02])
def test_line_crossing_times_agree_with_the_per_track_logic(seed, band):
    ours, reference = LineCounter(LINES, band), ReferenceLineCounter(LINES, band)
    timed = 0
    for (ids, labels, points, removed), ts in zip(frames(seed), frame_times(seed)):
        got = ours.update(ids, labels, points, ts)
        assert got == reference.update(ids, labels, points, ts)
        timed += sum(crossing.over_s is not None for crossing in got)
        ours.forget(removed)
        reference.forget(removed)
    assert timed > 5
