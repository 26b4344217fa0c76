"""video_decode.check: a real clip through real decoders, and the failures it must catch."""
import subprocess

import pytest

from edge_app.capture.video_decode.check import CLIP_SIZE, check_decoder, make_test_clip

from tests.support.gst import require_gi
from tests.support.media import require_tool


@pytest.fixture(scope="module")
def test_clip(tmp_path_factory):
    require_tool("ffmpeg")
    return make_test_clip(tmp_path_factory.mktemp("decode") / "testsrc.mp4")


@pytest.mark.parametrize("decoder", ["ffmpeg", "gstreamer"])
def test_the_test_clip_decodes(test_clip, decoder):
    if decoder == "gstreamer":
        require_gi()
    result = check_decoder(decoder, test_clip, CLIP_SIZE)
    assert result.ok, result.detail
    assert (result.decoder, result.frames, result.size) == (decoder, 10, CLIP_SIZE) and result.decode_fps > 0


def test_frames_of_the_wrong_size_fail(test_clip):
    result = check_decoder("ffmpeg", test_clip, (1280, 720))
    assert not result.ok and "frames are 640x480, the clip is 1280x720" in result.detail


def test_blank_frames_fail(tmp_path):
    black = tmp_path / "black.mp4"
    subprocess.run([require_tool("ffmpeg"), "-hide_banner", "-loglevel", "error", "-f", "lavfi",
                    "-i", "color=black:size=640x480:rate=10", "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                    str(black)], check=True)
    result = check_decoder("ffmpeg", black, CLIP_SIZE)
    assert not result.ok and "10 of 10 frames are blank" in result.detail


def test_a_short_or_missing_clip_fails(test_clip, tmp_path):
    short = check_decoder("ffmpeg", test_clip, CLIP_SIZE, frames=100)
    assert not short.ok and short.detail == "only 20 of 100 frames decoded"
    missing = check_decoder("ffmpeg", tmp_path / "none.mp4", CLIP_SIZE)
    assert not missing.ok and "cannot open the test clip" in missing.detail
