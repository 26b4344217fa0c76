"""Tracker, zones and lines together on a frame sequence, as the pipeline will use them."""
import numpy as np
import pytest

from edge_app.detect.detections import Detections
from edge_app.track import Line, LineCounter, Tracker, Zone, ZoneTracker, reference_points

W, H = 1920, 1080
LABELS = ("person", "bicycle", "car")


def frames(noise_px: float, seed: int = 0):
    """A person walking right to left along the bottom, a car driving left to right above it."""
    rng = np.random.default_rng(seed)
    for f in range(120):
        px = 1700 - 12 * f
        cx = 200 + 14 * f
        boxes = np.array([[px - 40, 780, px + 40, 1000], [cx - 120, 500, cx + 120, 640]], np.float32)
        boxes += rng.normal(0, noise_px, boxes.shape).astype(np.float32)
        yield Detections(boxes, [0.85, 0.8], [0, 2], LABELS)


@pytest.mark.parametrize("noise_px", [0.0, 3.0, 8.0])
def test_one_crossing_each_and_zone_entries(noise_px):
    tracker = Tracker()
    gate = LineCounter([Line("gate", (0.5, 0.0), (0.5, 1.0))])
    zones = ZoneTracker([Zone("left", ((0.0, 0.0), (0.3, 0.0), (0.3, 1.0), (0.0, 1.0)), frozenset({"person"}))])
    crossings, changes, ids_seen = [], [], set()
    for i, dets in enumerate(frames(noise_px)):
        dets = dets.with_track_ids(tracker.update(dets, i / 30))
        labels = [dets.label_of(int(c)) for c in dets.class_id]
        points = reference_points(dets.xyxy, W, H)
        crossings += gate.update(dets.track_id, labels, points)
        changes += zones.update(dets.track_id, labels, points)
        ids_seen.update(dets.track_id.tolist())
    assert ids_seen == {-1, 1, 2}   # -1 only on the first frame, before the tracks are confirmed
    assert sorted((c.label, c.direction) for c in crossings) == [("car", "out"), ("person", "in")]
    assert [(c.zone, c.label, c.change) for c in changes] == [("left", "person", "enter")]
    assert zones.occupants() == {"left": {"person": 1}}


def test_zones_and_lines_from_the_configuration():
    from edge_app.config.file import parse_config

    cfg = parse_config({"model": {"path": "m.onnx"}, "cameras": [{
        "id": "cam1", "source": "rtsp://h/s",
        "zones": [{"name": "driveway", "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 1.0], [0.1, 1.0]], "labels": ["car"]}],
        "lines": [{"name": "gate", "points": [[0.5, 0.0], [0.5, 1.0]]}],
    }]})
    cam = cfg.cameras[0]
    zone, line = Zone.from_config(cam.zones[0]), Line.from_config(cam.lines[0])
    assert zone == Zone("driveway", ((0.1, 0.5), (0.6, 0.5), (0.6, 1.0), (0.1, 1.0)), frozenset({"car"}))
    assert line == Line("gate", (0.5, 0.0), (0.5, 1.0))
    crossings = []
    counter = LineCounter([line])
    for x in np.linspace(0.8, 0.2, 10):
        crossings += counter.update([1], ["person"], np.array([[x, 0.5]]))
    assert [c.direction for c in crossings] == ["in"]
