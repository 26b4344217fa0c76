"""jetson_encoder: the gst-launch command line is built from checked integers only."""
from __future__ import annotations

import os

import pytest

from edge_app.record.jetson_encoder import gst_arguments
from tests.record.gst_standin import install_gst_standin


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


def test_the_child_gets_i420_pictures_and_each_comes_back_as_one_access_unit(tmp_path, monkeypatch):
    """GstJetsonPictures against a stand-in gst-launch-1.0 (ffmpeg's x264 behind the same pipes:
    there is no Jetson here): every picture given comes back once, in order, keyframes marked."""
    import numpy as np

    from edge_app.record.jetson_encoder import GstJetsonPictures
    from testkit.skips import require_tool

    require_tool("ffmpeg")
    install_gst_standin(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    encoder = GstJetsonPictures(320, 240, 10, gop_frames=10)
    rng = np.random.default_rng(0)
    out = []
    for i in range(25):
        out += encoder.encode(rng.integers(0, 256, (240, 320, 3), dtype=np.uint8), pts=i * 100, keyframe=i % 10 == 0)
    out += encoder.flush()
    assert [p.pts for p in out] == [i * 100 for i in range(25)]
    assert [i for i, p in enumerate(out) if p.keyframe] == [0, 10, 20]
