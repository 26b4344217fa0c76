"""Network streams demuxed with PyAV (FFmpeg's libraries) into Annex B packets for NVDEC.

PyNvVideoCodec's own demuxer is meant for files; a camera stream (RTSP over TCP, HTTP) is read
here instead and each packet is handed to the hardware decoder. NVDEC's parser wants H.264/HEVC
as an Annex B byte stream (start codes, parameter sets in band): RTSP already delivers that, with
the SPS/PPS of the SDP in the extradata, which is sent once with the first packet; an MP4-style
stream (length-prefixed NAL units) goes through FFmpeg's ``*_mp4toannexb`` bitstream filter.

Errors follow the OpenCV path: cannot connect -> ``SourceUnavailable`` (retried with backoff),
a stream that can never be decoded here -> ``SourceError``.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, Optional, Tuple

import numpy as np

from edge_app.capture.pyav.container import FFMPEG_OPTIONS_ENV, PacketTap, ffmpeg_options, import_av, open_video, stream_fps
from edge_app.capture.packets import PacketSink
from edge_app.capture.sources import SourceError
from edge_app.config.redact import mask_secrets

log = logging.getLogger(__name__)

__all__ = ["AvDemuxer", "FFMPEG_OPTIONS_ENV", "NVDEC_CODECS", "ffmpeg_options", "is_annexb"]

#: FFmpeg codec names NVDEC decodes, and the name of each in ``PyNvVideoCodec.cudaVideoCodec``
NVDEC_CODECS: Dict[str, str] = {"h264": "H264", "hevc": "HEVC", "av1": "AV1", "vp9": "VP9", "vp8": "VP8",
                                "mpeg2video": "MPEG2", "mpeg4": "MPEG4"}
_ANNEXB_FILTERS = {"h264": "h264_mp4toannexb", "hevc": "hevc_mp4toannexb"}
_START_CODES = (b"\x00\x00\x00\x01", b"\x00\x00\x01")


def is_annexb(data: bytes) -> bool:
    return bytes(data[:4]).startswith(_START_CODES)


class AvDemuxer:
    """The video stream of one URL (or file), as Annex B packets with their presentation times."""

    def __init__(self, target: str, open_timeout_s: float, read_timeout_s: float,
                 options: Optional[Dict[str, str]] = None, packet_sink: Optional[PacketSink] = None) -> None:
        self._av = import_av("decoder nvdec", "install edge-app[nvdec]")
        self._container, stream = open_video(self._av, target, open_timeout_s, read_timeout_s, options)
        # the packets as demuxed (before the Annex B filter): what a muxer copies
        self._tap = PacketTap(packet_sink, stream)
        try:
            self._setup(mask_secrets(target), stream)
        except BaseException:
            self._container.close()
            raise
        self._tap.opened()

    def _setup(self, masked: str, stream: Any) -> None:
        self._stream = stream
        context = stream.codec_context
        self.codec_name = str(context.name)
        if self.codec_name not in NVDEC_CODECS:
            raise SourceError(f"{masked} is {self.codec_name}, which NVDEC does not decode; "
                              f"use decoder ffmpeg (NVDEC takes {', '.join(sorted(NVDEC_CODECS))})")
        self.width, self.height = int(context.width or 0), int(context.height or 0)
        self.fps = stream_fps(stream)
        extradata = bytes(context.extradata or b"")
        self._filter: Any = None
        self._header: Optional[bytes] = None
        if self.codec_name in _ANNEXB_FILTERS and extradata:
            if is_annexb(extradata):
                self._header = extradata  # parameter sets from the SDP, maybe never repeated in band
            else:
                from av.bitstream import BitStreamFilterContext
                self._filter = BitStreamFilterContext(_ANNEXB_FILTERS[self.codec_name], stream)
        self._packets = self._container.demux(stream)

    def packets(self) -> Iterator[Tuple[np.ndarray, int]]:
        """(Annex B bytes, pts) of each packet until the stream ends; FFmpeg errors propagate."""
        for packet in self._packets:
            if packet.size == 0:  # the demuxer's end-of-stream marker
                continue
            self._tap.tap(packet)
            for out in (self._filter.filter(packet) if self._filter is not None else (packet,)):
                if not out.size:
                    continue
                data = bytes(out)
                if self._header is not None:
                    # parameter sets travel with the first picture: a packet of them alone is
                    # refused by some decoders
                    data, self._header = self._header + data, None
                yield np.frombuffer(data, dtype=np.uint8), int(out.pts if out.pts is not None else 0)

    def close(self, reason: str = "closed") -> None:
        self._tap.closed(reason)
        self._container.close()
