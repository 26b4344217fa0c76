"""NVENC through PyNvVideoCodec (``CreateEncoder``) for masked recordings on a discrete GPU.

The masked picture goes to the encoder as NV12 from host memory (the masking ran on the CPU;
the GPU copy is NVENC's own). No B-frames, so pictures leave in the order they came. A source
keyframe is an IDR with its SPS and PPS in band (``FORCEIDR | OUTPUT_SPSPPS``), so a clip cut
there decodes on its own, and the encoder makes no keyframe of its own before ``LONG_GOP``.

PyNvVideoCodec 2.1 and later take an ``NV_ENC_PIC_PARAMS`` (flags and a timestamp) and return
one dict per picture, its timestamp given back: the presentation time is found by it. Earlier
2.x versions take the flags alone and return the bitstream as bytes: it is cut into access
units, which take the oldest presentation times still waiting.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from edge_app.opencv import opencv
from edge_app.record.h264_units import split_access_units
from edge_app.record.picture_encoders import LONG_GOP, EncodedPicture

log = logging.getLogger(__name__)

#: average bits per second for each pixel of a second's pictures: about 7.8 Mbit/s at 1080p30
PIXELS_PER_BIT = 8
MIN_BITRATE = 1_000_000
MAX_BITRATE = 20_000_000


def bgr_to_nv12(bgr: np.ndarray) -> np.ndarray:
    """A BGR picture (even sides) as one flat NV12 buffer: the Y plane, then U and V interleaved."""
    cv2 = opencv()
    height, width = bgr.shape[:2]
    i420 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420).reshape(-1)
    luma, quarter = width * height, width * height // 4
    out = np.empty(luma + 2 * quarter, dtype=np.uint8)
    out[:luma] = i420[:luma]
    out[luma::2] = i420[luma:luma + quarter]
    out[luma + 1::2] = i420[luma + quarter:]
    return out


def bitstream_bytes(bitstream: Any) -> bytes:
    """What an older PyNvVideoCodec returned (bytes, a list or array of byte values, or a list of
    buffers) as bytes."""
    if bitstream is None or len(bitstream) == 0:
        return b""
    if isinstance(bitstream, (bytes, bytearray, memoryview)):
        return bytes(bitstream)
    if isinstance(bitstream, (list, tuple)) and isinstance(bitstream[0], (bytes, bytearray, memoryview, np.ndarray)):
        return b"".join(bitstream_bytes(part) for part in bitstream)  # one buffer per picture
    return np.asarray(bitstream, dtype=np.uint8).tobytes()


def encoder_outputs(result: Any) -> List[Tuple[Optional[int], bytes]]:
    """(timestamp given to the encoder, or None where it gives none back; bytes) of what
    ``Encode`` / ``EndEncode`` returned, in order."""
    if isinstance(result, (list, tuple)) and result and isinstance(result[0], dict):
        return [(int(packet["timestamp"]) if packet.get("timestamp") is not None else None,
                 bitstream_bytes(packet["data"])) for packet in result]
    data = bitstream_bytes(result)
    return [(None, data)] if data else []


def bitrate_for(width_px: int, height_px: int, fps: int) -> int:
    return max(MIN_BITRATE, min(MAX_BITRATE, width_px * height_px * fps // PIXELS_PER_BIT))


class NvencPictures:
    """Implements ``PictureEncoder`` with PyNvVideoCodec's encoder on GPU 0; not thread-safe."""

    def __init__(self, width_px: int, height_px: int, fps: float, preset: str = "P4") -> None:
        import PyNvVideoCodec as nvc

        rate = max(1, int(round(fps or 25)))
        bitrate = bitrate_for(width_px, height_px, rate)
        # every option as text, as PyNvVideoCodec hands them to NVENC; VBR capped at twice the average
        options = {"codec": "h264", "preset": preset, "tuning_info": "low_latency", "bf": "0", "rc": "vbr",
                   "bitrate": str(bitrate), "maxbitrate": str(2 * bitrate), "vbvbufsize": str(bitrate),
                   "gop": str(LONG_GOP), "idrperiod": str(LONG_GOP), "repeatspspps": "1", "fps": str(rate)}
        self._encoder = nvc.CreateEncoder(width_px, height_px, "NV12", True, **options)
        flags = nvc.NV_ENC_PIC_FLAGS
        self._idr_flags = int(flags.FORCEIDR) | int(flags.OUTPUT_SPSPPS)
        self._pic_params = getattr(nvc, "NV_ENC_PIC_PARAMS", None)  # 2.1 and later
        self._count = 0
        self._pts_of: Dict[int, int] = {}  # the timestamp given to NVENC -> the picture's pts

    def encode(self, bgr: np.ndarray, pts: int, keyframe: bool) -> List[EncodedPicture]:
        nv12 = bgr_to_nv12(bgr)
        flags = self._idr_flags if keyframe else 0
        index, self._count = self._count, self._count + 1
        self._pts_of[index] = pts
        if self._pic_params is not None:
            params = self._pic_params()
            params.inputTimeStamp = index
            params.encodePicFlags = flags
            result = self._encoder.Encode(nv12, params)
        else:
            result = self._encoder.Encode(nv12, flags) if flags else self._encoder.Encode(nv12)
        return self._pictures(result)

    def flush(self) -> List[EncodedPicture]:
        out = self._pictures(self._encoder.EndEncode())
        self._pts_of.clear()
        return out

    def _pictures(self, result: Any) -> List[EncodedPicture]:
        out = []
        for timestamp, data in encoder_outputs(result):
            for unit in split_access_units(data):
                index = timestamp if timestamp in self._pts_of else min(self._pts_of, default=None)
                timestamp = None  # a second picture in one packet takes the next waiting time
                if index is None:
                    log.warning("NVENC returned more pictures than it was given; the extra one is dropped")
                    break
                pts = self._pts_of.pop(index)
                out.append(EncodedPicture(unit.data, pts, pts, unit.keyframe))
        return out


__all__ = ["NvencPictures", "bgr_to_nv12", "bitrate_for", "bitstream_bytes", "encoder_outputs"]
