"""jetson_encoder: the gst-launch command line is built from checked integers only."""
from __future__ import annotations

import os

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


STANDIN_GST_LAUNCH = """#!/usr/bin/env python3
# A stand-in for gst-launch-1.0 running the Jetson pipeline (no Jetson here): raw I420 in on
# fd 0, an H.264 byte stream with access unit delimiters out on fd 1, encoded by ffmpeg's x264.
import os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
size = args["width"] + "x" + args["height"]
rate = args["framerate"].split("/")[0]
os.execvp("ffmpeg", ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                     "-s", size, "-r", rate, "-i", "-", "-c:v", "libx264", "-g", args["idrinterval"], "-sc_threshold", "0", "-bf", "0",
                     "-bsf:v", "h264_metadata=aud=insert", "-f", "h264", "-"])
"""


def test_the_child_gets_i420_pictures_and_each_comes_back_as_one_access_unit(tmp_path, monkeypatch):
    """GstJetsonPictures against a stand-in gst-launch-1.0 (ffmpeg's x264 behind the same pipes:
    there is no Jetson here): every picture given comes back once, in order, keyframes marked."""
    import numpy as np

    from edge_app.record.jetson_encoder import GstJetsonPictures
    from testkit.skips import require_tool

    require_tool("ffmpeg")
    program = tmp_path / "gst-launch-1.0"
    program.write_text(STANDIN_GST_LAUNCH)
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    encoder = GstJetsonPictures(320, 240, 10, gop_frames=10)
    rng = np.random.default_rng(0)
    out = []
    for i in range(25):
        out += encoder.encode(rng.integers(0, 256, (240, 320, 3), dtype=np.uint8), pts=i * 100, keyframe=i % 10 == 0)
    out += encoder.flush()
    assert [p.pts for p in out] == [i * 100 for i in range(25)]
    assert [i for i, p in enumerate(out) if p.keyframe] == [0, 10, 20]
