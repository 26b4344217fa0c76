"""The encoders behind ``MaskedEncoder``: masked BGR pictures in, H.264 pictures out.

Each takes a picture with its presentation time and whether the source had a keyframe there (the
output must have one too), and returns the encoded pictures ready so far, each with the
presentation time of the picture it encodes. x264 (PyAV) runs everywhere; NVENC through
PyNvVideoCodec on a discrete GPU that has it. The Jetson's GStreamer encoder is in
``jetson_encoder``. Which one a device uses is ``encoder_choice``'s rule.
"""
from __future__ import annotations

import collections
import logging
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Deque, List, Protocol

import numpy as np

from edge_app.opencv import opencv
from edge_app.record.h264_units import split_access_units

log = logging.getLogger(__name__)

#: keyframes come where the source has them (forced), not on a count of the encoder's own
LONG_GOP = 600


@dataclass(frozen=True)
class EncodedPicture:
    data: bytes
    pts: int
    dts: int
    keyframe: bool


class PictureEncoder(Protocol):
    def encode(self, bgr: np.ndarray, pts: int, keyframe: bool) -> List[EncodedPicture]: ...

    def flush(self) -> List[EncodedPicture]: ...


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


class X264Pictures:
    """libx264 through PyAV (``preset``, CRF, ``tune=zerolatency``: no frame is held back)."""

    def __init__(self, width_px: int, height_px: int, time_base: Fraction, fps: float,
                 preset: str = "veryfast", crf: int = 23) -> None:
        import av

        self._av = av
        self._time_base = time_base
        enc = self._encoder = av.CodecContext.create("libx264", "w")
        enc.width, enc.height, enc.pix_fmt = width_px, height_px, "yuv420p"
        enc.time_base = time_base
        if fps > 0:
            enc.framerate = Fraction(fps).limit_denominator(1001)
        enc.gop_size = LONG_GOP
        enc.options = {"preset": preset, "tune": "zerolatency", "crf": str(int(crf)),
                       "forced-idr": "1", "x264-params": "scenecut=0"}

    def encode(self, bgr: np.ndarray, pts: int, keyframe: bool) -> List[EncodedPicture]:
        picture = self._av.VideoFrame.from_ndarray(bgr, format="bgr24").reformat(format="yuv420p")
        picture.pts, picture.time_base = pts, self._time_base
        if keyframe:
            picture.pict_type = self._av.video.frame.PictureType.I
        return self._pictures(self._encoder.encode(picture))

    def flush(self) -> List[EncodedPicture]:
        return self._pictures(self._encoder.encode(None))

    @staticmethod
    def _pictures(packets) -> List[EncodedPicture]:
        return [EncodedPicture(bytes(p), p.pts, p.dts if p.dts is not None else p.pts, bool(p.is_keyframe))
                for p in packets]


def bitstream_bytes(bitstream: Any) -> bytes:
    # PyNvVideoCodec returns bytes, a list or array of byte values, or a list of buffers, by version
    if bitstream is None or len(bitstream) == 0:
        return b""
    if isinstance(bitstream, (bytes, bytearray, memoryview)):
        return bytes(bitstream)
    if isinstance(bitstream, (list, tuple)) and isinstance(bitstream[0], (bytes, bytearray, memoryview, np.ndarray)):
        return b"".join(bitstream_bytes(part) for part in bitstream)  # one buffer per picture
    return np.asarray(bitstream, dtype=np.uint8).tobytes()


class NvencPictures:
    """NVENC through PyNvVideoCodec 2.x (``CreateEncoder``), fed NV12 from host memory.

    No B-frames, so pictures leave in the order they came: each encoded picture takes the oldest
    presentation time still waiting. A source keyframe is an IDR with its SPS and PPS in band
    (``FORCEIDR | OUTPUT_SPSPPS``), so a clip cut there decodes on its own.
    """

    def __init__(self, width_px: int, height_px: int, fps: float, preset: str = "P4", const_qp: int = 25) -> None:
        import PyNvVideoCodec as nvc

        self._nvc = nvc
        # GPU 0; every option as text, which is how PyNvVideoCodec passes them on to NVENC
        options = {"codec": "h264", "preset": preset, "tuning_info": "low_latency",
                   "bf": "0", "rc": "constqp", "constqp": str(int(const_qp)), "gop": str(LONG_GOP),
                   "idrperiod": str(LONG_GOP), "repeatspspps": "1", "fps": str(max(1, int(round(fps or 25))))}
        self._encoder = nvc.CreateEncoder(width_px, height_px, "NV12", True, **options)
        flags = nvc.NV_ENC_PIC_FLAGS
        self._idr_flags = int(flags.FORCEIDR) | int(flags.OUTPUT_SPSPPS)
        self._waiting: Deque[int] = collections.deque()

    def encode(self, bgr: np.ndarray, pts: int, keyframe: bool) -> List[EncodedPicture]:
        self._waiting.append(pts)
        nv12 = bgr_to_nv12(bgr)
        bitstream = self._encoder.Encode(nv12, self._idr_flags) if keyframe else self._encoder.Encode(nv12)
        return self._pictures(bitstream_bytes(bitstream))

    def flush(self) -> List[EncodedPicture]:
        out = self._pictures(bitstream_bytes(self._encoder.EndEncode()))
        self._waiting.clear()
        return out

    def _pictures(self, bitstream: bytes) -> List[EncodedPicture]:
        out = []
        for unit in split_access_units(bitstream):
            if not self._waiting:
                log.warning("NVENC returned more pictures than it was given; the extra one is dropped")
                break
            pts = self._waiting.popleft()
            out.append(EncodedPicture(unit.data, pts, pts, unit.keyframe))
        return out


__all__ = ["EncodedPicture", "NvencPictures", "PictureEncoder", "X264Pictures", "bgr_to_nv12", "bitstream_bytes"]
