"""Zones and lines placed with the tracker: in a child process (RemoteTracker.update_placed) they
give the zone changes, crossings and occupants that the same CameraPlacement gives here."""
import inspect

import pytest

from edge_app.detect.detections import Detections
from edge_app.track.lines import Line
from edge_app.track.placement import (Areas, CameraPlacement, Placed, PlacingTracker, expire_and_place,
                                      pack_placed, track_and_place, unpack_placed)
from edge_app.track.processes import TrackerProcesses
from edge_app.track.remote_tracker import RemoteTracker
from edge_app.track.tracker import Tracker, TrackerSettings
from edge_app.track.zones import Zone, ZoneChange
from edge_app.track.lines import LineCrossing
from tests.track.test_processes import walking_frames

FRAME_SIZE = (1920, 1080)
LABELS = ("person", "bicycle", "car")
AREAS = {
    "a zone": Areas(zones=(Zone("left", ((0, 0), (0.5, 0), (0.5, 1), (0, 1))),)),
    "a line": Areas(lines=(Line("middle", (0.5, 0), (0.5, 1)),)),
    "zones and lines with labels": Areas(
        zones=(Zone("left", ((0, 0), (0.5, 0), (0.5, 1), (0, 1))),
               Zone("bottom", ((0, 0.5), (1, 0.5), (1, 1), (0, 1)), frozenset({"person"}))),
        lines=(Line("middle", (0.5, 0), (0.5, 1)), Line("across", (0, 0.6), (1, 0.6), frozenset({"car"})))),
}


@pytest.fixture
def processes():
    pool = TrackerProcesses(1)
    yield pool
    pool.close()


def _labelled(detections: Detections) -> Detections:
    return Detections(detections.xyxy, detections.confidence, detections.class_id % len(LABELS), LABELS)


def test_a_remote_tracker_is_a_placing_tracker_with_its_signatures():
    assert issubclass(RemoteTracker, PlacingTracker) and not issubclass(Tracker, PlacingTracker)
    for name in ("place_with", "update_placed", "expire_placed"):
        assert (list(inspect.signature(getattr(RemoteTracker, name)).parameters)
                == list(inspect.signature(getattr(PlacingTracker, name)).parameters))


@pytest.mark.parametrize("areas", AREAS.values(), ids=AREAS.keys())
@pytest.mark.parametrize("objects, frames", [(5, 80), (20, 60)])
def test_placed_in_a_child_as_here(processes, areas, objects, frames):
    remote = processes.tracker("cam0", TrackerSettings())
    remote.place_with(areas)
    tracker, placement = Tracker(TrackerSettings()), CameraPlacement(areas)
    changes = 0
    for index, detections in enumerate(walking_frames(objects, frames)):
        detections, ts = _labelled(detections), 1_800_000_000.0 + index / 10
        ids, placed = remote.update_placed(detections, ts, FRAME_SIZE)
        ids_here, placed_here = track_and_place(tracker, placement, detections, ts, FRAME_SIZE)
        if index == 0:  # a new child says who is in its zones (nobody) from its first answer
            assert placed.occupants == {}
            placed_here = Placed(placed_here.zone_changes, placed_here.crossings, {})
        assert ids.tolist() == ids_here.tolist() and placed == placed_here
        assert remote.removed_ids == tracker.removed_ids
        changes += len(placed.zone_changes) + len(placed.crossings)
    assert changes > 0  # the walkers did cross something
    aged = remote.expire_placed(1_800_000_100.0)
    assert aged == expire_and_place(tracker, placement, 1_800_000_100.0)
    assert len(remote) == 0 and (not areas.zones or aged.occupants == {})


def test_label_names_are_sent_once_and_again_to_a_new_child(processes):
    areas = AREAS["zones and lines with labels"]
    remote = processes.tracker("cam0", TrackerSettings(confirm_hits=1))
    remote.place_with(areas)
    frames = [_labelled(d) for d in walking_frames(5, 20)]
    sent = []
    host = remote._host
    real = host.request
    host.request = lambda generation, message, start=True: (sent.append(message), real(generation, message, start))[1]
    names_sent = []
    for index, detections in enumerate(frames[:3]):
        remote.update_placed(detections, 1_800_000_000.0 + index / 10, FRAME_SIZE)
        names_sent.append([m for m in sent if m[0] == "place"][-1][-1])  # what reached the child
    assert names_sent == [LABELS, None, None]
    processes.close()  # the child goes; a new pool's child must be told the names again
    other = TrackerProcesses(1)
    try:
        again = other.tracker("cam0", TrackerSettings(confirm_hits=1))
        again.place_with(areas)
        _, placed = again.update_placed(frames[0], 1_800_000_000.0, FRAME_SIZE)
        assert placed.occupants is not None  # a new child always says who is in its zones
    finally:
        other.close()


def test_placing_without_areas_is_refused(processes):
    remote = processes.tracker("cam0", TrackerSettings())
    with pytest.raises(RuntimeError, match="place_with"):
        remote.update_placed(Detections.empty(LABELS), 1.0, FRAME_SIZE)
    remote.update(Detections.empty(LABELS), 1.0)
    with pytest.raises(RuntimeError, match="before the first request"):
        remote.place_with(AREAS["a zone"])


@pytest.mark.parametrize("placed", [
    Placed([], [], None),
    Placed([ZoneChange("left", 3, "person", "enter", 12.5), ZoneChange("left", 4, "car", "leave")],
           [LineCrossing("middle", 3, "person", "in", 12.25), LineCrossing("middle", 9, "car", "out")],
           {"left": {"person": 1}}),
], ids=["nothing", "changes"])
def test_what_crosses_the_pipe_comes_back_the_same(placed):
    assert unpack_placed(pack_placed(placed)) == placed
