"""The encoders behind ``MaskedEncoder``: masked BGR pictures in, H.264 pictures out.

Each takes a picture with its presentation time and whether the source had a keyframe there (the
output must have one too), and returns the encoded pictures ready so far, each with the
presentation time of the picture it encodes. x264 (PyAV, here) runs everywhere; NVENC through
PyNvVideoCodec on a discrete GPU that has it is in ``nvenc_encoder``, the Jetson's GStreamer
encoder in ``jetson_encoder``. Which one a device uses is ``encoder_choice``'s rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import List, Protocol

import numpy as np

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


__all__ = ["EncodedPicture", "PictureEncoder", "X264Pictures"]
