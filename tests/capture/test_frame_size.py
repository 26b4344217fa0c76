"""Frames above 8K on a side are refused with a clear camera error, not decoded into gigabytes."""
import cv2
import numpy as np
import pytest

from edge_app.capture import CameraWorker, StreamState
from edge_app.capture.sources import MAX_FRAME_SIDE_PX, OpenCVSource, open_source
from edge_app.config.source_spec import SourceError, parse_source

from tests.capture.helpers import FAST, camera, timed_stop, wait_for


@pytest.fixture
def wide_png(tmp_path):
    """A picture one pixel wider than the limit (small in bytes: 64 rows)."""
    path = tmp_path / "wide.png"
    assert cv2.imwrite(str(path), np.zeros((64, MAX_FRAME_SIDE_PX + 1, 3), np.uint8))
    return path


def test_a_file_source_above_8k_is_a_permanent_camera_error(wide_png):
    worker = CameraWorker(camera(str(wide_png)), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is StreamState.ERROR, 10)
        assert worker.last_error == f"frames of {MAX_FRAME_SIDE_PX + 1}x64 px are larger than the 8192 px per side this appliance accepts"
        assert worker.stats()["frames_captured"] == 0
    finally:
        assert timed_stop(worker) < 5


def test_a_frame_above_8k_is_refused_when_read_even_if_the_backend_did_not_say_so_at_open(wide_png):
    source = OpenCVSource(cv2.VideoCapture(str(wide_png), cv2.CAP_FFMPEG), live=False)
    try:
        with pytest.raises(SourceError, match="larger than the 8192 px"):
            source.read()
    finally:
        source.release()


def test_a_frame_of_exactly_8k_is_accepted(tmp_path):
    path = tmp_path / "edge.png"
    assert cv2.imwrite(str(path), np.zeros((16, MAX_FRAME_SIDE_PX, 3), np.uint8))
    source = open_source(parse_source(str(path)))
    try:
        assert source.read().shape == (16, MAX_FRAME_SIDE_PX, 3)
    finally:
        source.release()
