"""Zone membership: the reference point, hysteresis at the border, labels, ended tracks."""
from typing import List, Sequence, Tuple

import numpy as np
import pytest

from edge_app.track.geometry import points_in_polygon, reference_points
from edge_app.track.zones import Zone, ZoneChange, ZoneTracker

DRIVEWAY = Zone("driveway", ((0.1, 0.5), (0.6, 0.5), (0.6, 1.0), (0.1, 1.0)))


def feed(zt: ZoneTracker, path: Sequence[Tuple[float, float]], track_id: int = 3, label: str = "person") -> List[List[ZoneChange]]:
    return [zt.update([track_id], [label], np.array([p])) for p in path]


def flat(changes: List[List[ZoneChange]]) -> List[Tuple[int, str]]:
    return [(frame, c.change) for frame, cs in enumerate(changes) for c in cs]


IN, OUT = (0.3, 0.7), (0.8, 0.2)


@pytest.mark.parametrize("path, min_frames, expected", [
    ([OUT, IN, IN, IN, IN], 3, [(3, "enter")]),
    ([OUT, IN, IN, IN, IN], 1, [(1, "enter")]),
    ([IN, IN, IN, OUT, OUT, OUT], 3, [(2, "enter"), (5, "leave")]),
    ([IN, IN, OUT, IN, IN], 3, []),                          # two frames in are not enough
    ([IN, IN, IN, OUT, IN, OUT, IN, OUT, IN], 3, [(2, "enter")]),   # flicker does not leave
    ([IN, OUT] * 10, 2, []),                                 # flicker at the border: nothing
])
def test_membership_needs_consecutive_frames(path, min_frames, expected):
    assert flat(feed(ZoneTracker([DRIVEWAY], min_frames=min_frames), path)) == expected


@pytest.mark.parametrize("path, fps, expected", [
    ([OUT, IN, IN, IN, IN], 30.0, [(3, "enter")]),           # a fast camera: three frames, as before
    ([OUT, IN, IN, IN, IN], 1.0, [(2, "enter")]),            # one a second: two frames a second apart
    ([OUT, IN, IN, OUT, OUT], 1.5, [(2, "enter"), (4, "leave")]),
    ([IN, OUT] * 10, 1.0, []),                               # flicker at the border: nothing, at any rate
    ([IN, IN, OUT, IN, IN, OUT], 1.0, [(1, "enter")]),
])
def test_two_observations_half_a_second_apart_settle_a_change(path, fps, expected):
    zt = ZoneTracker([DRIVEWAY])
    changes = [zt.update([3], ["person"], np.array([p]), i / fps) for i, p in enumerate(path)]
    assert flat(changes) == expected


def test_change_names_zone_track_and_label():
    changes = feed(ZoneTracker([DRIVEWAY], min_frames=2), [IN, IN], track_id=9, label="car")
    assert changes[1] == [ZoneChange("driveway", 9, "car", "enter")]


def test_labels_filter_the_objects_that_count():
    zt = ZoneTracker([Zone("lot", DRIVEWAY.polygon, frozenset({"car"}))], min_frames=1)
    assert flat(feed(zt, [IN, IN], label="person")) == []
    assert flat(feed(zt, [IN], track_id=4, label="car")) == [(0, "enter")]
    assert zt.occupants() == {"lot": {"car": 1}}


def test_untracked_boxes_are_skipped():
    zt = ZoneTracker([DRIVEWAY], min_frames=1)
    assert zt.update([-1], ["person"], np.array([IN])) == []
    assert zt.occupants() == {}


def test_forget_makes_ended_tracks_leave():
    zt = ZoneTracker([DRIVEWAY, Zone("all", ((0, 0), (1, 0), (1, 1), (0, 1)))], min_frames=1)
    zt.update([1, 2], ["person", "car"], np.array([IN, OUT]))
    assert zt.occupants() == {"driveway": {"person": 1}, "all": {"person": 1, "car": 1}}
    left = zt.forget([1, 2])
    assert sorted((c.zone, c.track_id, c.change) for c in left) == [("all", 1, "leave"), ("all", 2, "leave"), ("driveway", 1, "leave")]
    assert zt.occupants() == {} and zt.forget([1]) == []


def test_an_absent_track_keeps_its_membership():
    zt = ZoneTracker([DRIVEWAY], min_frames=2)
    feed(zt, [IN, IN])
    for _ in range(5):
        assert zt.update([], [], np.zeros((0, 2))) == []
    assert zt.occupants() == {"driveway": {"person": 1}}


@pytest.mark.parametrize("box, size, expected", [
    ([100, 200, 300, 500], (1000, 1000), (0.2, 0.5)),
    ([0, 0, 1920, 1080], (1920, 1080), (0.5, 1.0)),
    ([960, 0, 980, 540], (1920, 1080), (970 / 1920, 0.5)),
])
def test_reference_point_is_the_bottom_centre(box, size, expected):
    assert reference_points(np.array([box]), *size)[0] == pytest.approx(expected)


def test_reference_points_need_a_frame_size():
    with pytest.raises(ValueError, match="frame size"):
        reference_points(np.zeros((1, 4)), 0, 480)


@pytest.mark.parametrize("point, inside", [
    ((0.3, 0.7), True), ((0.05, 0.7), False), ((0.3, 0.4), False), ((0.59, 0.99), True), ((0.7, 0.7), False),
])
def test_point_in_polygon(point, inside):
    assert points_in_polygon(np.array([point]), DRIVEWAY.polygon).tolist() == [inside]


def test_point_in_a_concave_polygon():
    u_shape = ((0, 0), (1, 0), (1, 1), (0.7, 1), (0.7, 0.3), (0.3, 0.3), (0.3, 1), (0, 1))
    got = points_in_polygon(np.array([[0.5, 0.8], [0.5, 0.1], [0.1, 0.8], [0.9, 0.8]]), u_shape)
    assert got.tolist() == [False, True, True, True]


@pytest.mark.parametrize("kwargs, message", [
    (dict(zones=[DRIVEWAY, DRIVEWAY]), "unique"),
    (dict(zones=[DRIVEWAY], min_frames=0), "min_frames"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ZoneTracker(**kwargs)


def test_a_zone_needs_three_points():
    with pytest.raises(ValueError, match="3 points"):
        Zone("z", ((0, 0), (1, 1)))


@pytest.mark.parametrize("box, zone_polygon", [
    ((100, 200, 300, 480), ((0.0, 0.5), (1.0, 0.5), (1.0, 1.0), (0.0, 1.0))),   # feet on the bottom edge
    ((0, 200, 0, 300), ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0))),     # a sliver on the left edge
    ((640, 100, 640, 200), ((0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (0.5, 1.0))),  # a sliver on the right edge
])
def test_an_object_touching_the_frame_edge_is_in_a_zone_drawn_to_that_edge(box, zone_polygon):
    """Boxes are clipped to the frame, so a person at the bottom of the picture has y2 == height;
    a zone drawn to the frame's edge must hold them (it is the commonest zone there is)."""
    points = reference_points(np.array([box], dtype=float), 640, 480)
    assert points_in_polygon(points, zone_polygon).tolist() == [True]
