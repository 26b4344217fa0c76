"""picture_encoders: what the NVENC path feeds the GPU, checked on the CPU; check-config's words per path."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from edge_app.config.file import parse_config
from edge_app.record.encoder_choice import EncodeCapabilities, choose_encoder
from edge_app.record.masked_encoder import recording_path
from edge_app.record.picture_encoders import bgr_to_nv12


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


CAMERA = {"id": "yard", "source": "rtsp://h/s", "privacy": {"masks": [{"polygon": [[0, 0], [0.5, 0], [0.5, 0.5]]}],
                                                             "record_height": 720}}


@pytest.mark.parametrize("caps, says", [
    (EncodeCapabilities(jetson_model="NVIDIA Jetson Orin Nano Developer Kit", gst_encoder=True),
     "re-encoded with x264 on the CPU (privacy masks) at 720 px high; Jetson Orin Nano has no hardware video "
     "encoder (NVENC)"),
    (EncodeCapabilities(jetson_model="NVIDIA Jetson AGX Orin Developer Kit", gst_encoder=True),
     "re-encoded with the Jetson's NVENC (GStreamer nvv4l2h264enc) (privacy masks) at 720 px high; "
     "NVIDIA Jetson AGX Orin Developer Kit has NVENC"),
    (EncodeCapabilities(nvenc_problem=None),
     "re-encoded with NVENC (PyNvVideoCodec) (privacy masks) at 720 px high; the GPU has NVENC"),
], ids=["orin nano", "agx orin", "dgpu"])
def test_check_config_says_the_path_and_why(caps, says):
    config = parse_config({"model": {"path": "m.onnx"}, "cameras": [CAMERA, {"id": "gate", "source": "rtsp://h/t"}],
                           "record": {"continuous": {"enabled": True}}})
    assert recording_path(config, config.cameras[0], choose_encoder(caps)) == says
    assert recording_path(config, config.cameras[1], choose_encoder(caps)) == "stream copy"


@pytest.mark.parametrize("bitstream", [
    b"\x00\x00\x01\x65\x88", bytearray(b"\x00\x00\x01\x65\x88"), [0, 0, 1, 0x65, 0x88],
    np.array([0, 0, 1, 0x65, 0x88], np.uint8), [b"\x00\x00\x01", b"\x65\x88"], [np.array([0, 0, 1], np.uint8), b"\x65\x88"],
], ids=["bytes", "bytearray", "list of ints", "array", "list of buffers", "mixed buffers"])
def test_every_form_pynvvideocodec_returns_is_read_as_the_same_bytes(bitstream):
    from edge_app.record.picture_encoders import bitstream_bytes

    assert bitstream_bytes(bitstream) == b"\x00\x00\x01\x65\x88"


@pytest.mark.parametrize("empty", [None, b"", [], np.zeros(0, np.uint8)])
def test_nothing_returned_is_no_bytes(empty):
    from edge_app.record.picture_encoders import bitstream_bytes

    assert bitstream_bytes(empty) == b""
