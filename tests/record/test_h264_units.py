"""h264_units: a real H.264 byte stream (libx264) cut into one access unit per picture."""
from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest

from edge_app.record.h264_units import split_access_units


def annexb_stream(frames: int, keyframe_every: int, aud: bool) -> bytes:
    encoder = av.CodecContext.create("libx264", "w")
    encoder.width, encoder.height, encoder.pix_fmt = 320, 240, "yuv420p"
    encoder.time_base = Fraction(1, 25)
    encoder.gop_size = keyframe_every
    encoder.options = {"preset": "ultrafast", "tune": "zerolatency", "x264-params": f"scenecut=0:aud={int(aud)}",
                       "bf": "0"}
    rng = np.random.default_rng(3)
    out = b""
    for index in range(frames):
        picture = av.VideoFrame.from_ndarray(rng.integers(0, 255, (240, 320, 3), dtype=np.uint8), format="bgr24")
        picture = picture.reformat(format="yuv420p")
        picture.pts = index
        out += b"".join(bytes(p) for p in encoder.encode(picture))
    out += b"".join(bytes(p) for p in encoder.encode(None))
    return out


@pytest.mark.parametrize("aud", [False, True], ids=["no delimiters", "access unit delimiters"])
def test_each_picture_is_one_unit_and_the_keyframes_are_the_idrs(aud):
    data = annexb_stream(frames=12, keyframe_every=5, aud=aud)
    units = split_access_units(data)
    assert len(units) == 12
    assert [u.keyframe for u in units] == [i % 5 == 0 for i in range(12)]
    assert b"".join(u.data for u in units) == data  # nothing lost, nothing added
    # every unit decodes to exactly one picture
    decoder = av.CodecContext.create("h264", "r")
    pictures = sum(len(decoder.decode(av.Packet(u.data))) for u in units) + len(decoder.decode(None))
    assert pictures == 12


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x01", b"\x00\x00\x00\x01\x67\x42"], ids=["empty", "bare start code",
                                                                                              "parameter set only"])
def test_bytes_without_a_picture_make_no_unit(data):
    assert split_access_units(data) == []
