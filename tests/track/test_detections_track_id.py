"""Detections carry track ids once tracked, and stay as they were without."""
import numpy as np
import pytest

from edge_app.detect.detections import Detections


def dets(n: int = 3, **kw) -> Detections:
    return Detections(np.arange(n * 4, dtype=np.float32).reshape(n, 4), np.full(n, 0.5), np.zeros(n), ("person",), **kw)


def test_without_track_ids_nothing_changes():
    d = dets()
    assert d.track_id is None
    assert all("track_id" not in item for item in d.to_dicts())
    assert d[1:].track_id is None


@pytest.mark.parametrize("ids", [[5, 6, -1], np.array([5, 6, -1], np.int32), (5, 6, -1)])
def test_track_ids_are_int64_and_published(ids):
    d = dets().with_track_ids(ids)
    assert d.track_id.dtype == np.int64 and d.track_id.tolist() == [5, 6, -1]
    assert [item["track_id"] for item in d.to_dicts()] == [5, 6, -1]
    assert d[np.array([False, True, True])].track_id.tolist() == [6, -1]
    assert d[0].track_id.tolist() == [5]


@pytest.mark.parametrize("ids", [[1, 2], [1, 2, 3, 4], [[1, 2, 3]] * 2])
def test_misaligned_track_ids_are_refused(ids):
    with pytest.raises(ValueError, match="track_id"):
        dets(track_id=ids)


def test_empty_detections_take_empty_track_ids():
    assert Detections.empty().with_track_ids(np.zeros(0)).to_dicts() == []
