"""nvenc_encoder, checked on the CPU: the NV12 it feeds the GPU, how it reads what PyNvVideoCodec returns."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from edge_app.record.nvenc_encoder import bgr_to_nv12


@pytest.mark.parametrize("height, width", [(1080, 1920), (720, 1280), (480, 854)])
def test_nv12_for_nvenc_is_the_picture_with_interleaved_chroma(bus_jpg, height, width):
    bgr = cv2.resize(cv2.imread(str(bus_jpg)), (width, height))
    nv12 = bgr_to_nv12(bgr)
    assert nv12.shape == (width * height * 3 // 2,) and nv12.dtype == np.uint8
    back = cv2.cvtColor(nv12.reshape(height * 3 // 2, width), cv2.COLOR_YUV2BGR_NV12)
    mse = float(np.mean((back.astype(np.float64) - bgr.astype(np.float64)) ** 2))
    assert 10 * np.log10(255.0 ** 2 / mse) > 30  # only the chroma subsampling is lost
    # the masked black stays black through the conversion (Y 0 as video range maps it)
    black = bgr_to_nv12(np.zeros((height, width, 3), np.uint8))
    assert cv2.cvtColor(black.reshape(height * 3 // 2, width), cv2.COLOR_YUV2BGR_NV12).max() <= 2


@pytest.mark.parametrize("bitstream", [
    b"\x00\x00\x01\x65\x88", bytearray(b"\x00\x00\x01\x65\x88"), [0, 0, 1, 0x65, 0x88],
    np.array([0, 0, 1, 0x65, 0x88], np.uint8), [b"\x00\x00\x01", b"\x65\x88"], [np.array([0, 0, 1], np.uint8), b"\x65\x88"],
], ids=["bytes", "bytearray", "list of ints", "array", "list of buffers", "mixed buffers"])
def test_every_form_pynvvideocodec_returns_is_read_as_the_same_bytes(bitstream):
    from edge_app.record.nvenc_encoder import bitstream_bytes

    assert bitstream_bytes(bitstream) == b"\x00\x00\x01\x65\x88"


@pytest.mark.parametrize("empty", [None, b"", [], np.zeros(0, np.uint8)])
def test_nothing_returned_is_no_bytes(empty):
    from edge_app.record.nvenc_encoder import bitstream_bytes

    assert bitstream_bytes(empty) == b""


@pytest.mark.parametrize("result, expected", [
    # 2.1 and later: one dict per picture, the timestamp given back
    ([{"data": b"\x00\x00\x01\x65\x88", "timestamp": 7, "picture_type": 3},
      {"data": [0, 0, 1, 0x41, 0x9a], "timestamp": 8, "picture_type": 0}],
     [(7, b"\x00\x00\x01\x65\x88"), (8, b"\x00\x00\x01\x41\x9a")]),
    # 2.0: the bitstream alone
    (b"\x00\x00\x01\x65\x88", [(None, b"\x00\x00\x01\x65\x88")]),
    ([], []), (b"", []), (None, []),
], ids=["dicts", "bytes", "empty list", "empty bytes", "none"])
def test_what_encode_returns_is_read_with_its_timestamps(result, expected):
    from edge_app.record.nvenc_encoder import encoder_outputs

    assert encoder_outputs(result) == expected


@pytest.mark.parametrize("size, fps, bitrate", [((1920, 1080), 30, 7_776_000), ((1920, 1080), 10, 2_592_000),
                                                ((320, 240), 5, 1_000_000), ((3840, 2160), 60, 20_000_000)])
def test_the_nvenc_bitrate_follows_the_pixels_a_second_within_bounds(size, fps, bitrate):
    from edge_app.record.nvenc_encoder import bitrate_for

    assert bitrate_for(*size, fps) == bitrate
