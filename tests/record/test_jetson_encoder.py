"""jetson_encoder: the gst-launch command line is built from checked integers only."""
from __future__ import annotations

import pytest

from edge_app.record.jetson_encoder import gst_arguments


def test_the_pipeline_holds_the_size_rate_and_gop_and_nothing_else():
    args = gst_arguments(1280, 720, 25, 50)
    assert "width=1280" in args and "height=720" in args and "framerate=25/1" in args
    assert "idrinterval=50" in args and "nvv4l2h264enc" in args and "insert-sps-pps=true" in args
    assert f"blocksize={1280 * 720 * 3 // 2}" in args
    # every token is a fixed word or one of the numbers: no room for text from elsewhere
    assert all(" " not in a and ";" not in a and "`" not in a for a in args)


@pytest.mark.parametrize("width, height, fps, gop, field", [
    ("1280", 720, 25, 50, "width_px"),
    (1280, "720 ! filesink location=/etc/passwd", 25, 50, "height_px"),
    (1280, 720, 25.5, 50, "fps"),
    (1280, 720, 0, 50, "fps"),
    (1280, 720, 25, -1, "gop_frames"),
    (99999, 720, 25, 50, "width_px"),
    (True, 720, 25, 50, "width_px"),
], ids=["text width", "injected height", "fractional fps", "zero fps", "negative gop", "huge", "bool"])
def test_anything_but_a_checked_integer_is_refused(width, height, fps, gop, field):
    with pytest.raises(ValueError, match=field):
        gst_arguments(width, height, fps, gop)


def test_odd_sides_are_refused():
    with pytest.raises(ValueError, match="even"):
        gst_arguments(1281, 720, 25, 25)
