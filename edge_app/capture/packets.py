"""Compressed packets handed out by a camera's demuxer, for recording without re-encoding.

The packets that are decoded for analysis and the packets that are recorded come from the same
demuxer (many RTSP cameras allow two or three sessions in all). A source that can hand out its
compressed stream calls a ``PacketSink``; a source that cannot (V4L2 raw, CSI, ``test://``, still
images) calls ``PacketSink.unavailable`` once with the reason, which the camera's status shows.

``PacketSink.packet`` runs on the capture thread: it must never block (the recorder queues the
packet in a bounded queue and counts what it drops).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

#: codecs that are recorded by stream copy
RECORDABLE_CODECS = ("h264", "hevc")


@dataclass(frozen=True)
class StreamInfo:
    """What a muxer needs to write a stream by copy; sent again on every (re)connect."""

    camera_id: str
    codec: str  # FFmpeg codec name: "h264" or "hevc"
    width_px: int
    height_px: int
    time_base: Fraction  # unit of EncodedPacket.pts / dts
    extradata: bytes = b""  # avcC/hvcC or Annex B parameter sets; may be empty when they travel in band
    fps: float = 0.0  # nominal; 0 when unknown
    template: Any = None  # the PyAV input stream when the demuxer is PyAV (for add_stream_from_template)


@dataclass(frozen=True)
class EncodedPacket:
    """One compressed access unit of the video stream."""

    data: bytes
    pts: int  # presentation time in StreamInfo.time_base; monotonic within one connection
    dts: int
    keyframe: bool
    wall_ts: float  # Unix seconds when it was demuxed (the same clock as Frame.ts)
    duration: int = 0  # in StreamInfo.time_base; 0 when unknown


class PacketSink(Protocol):
    """Receives one camera's compressed stream. Every method runs on the capture thread: never block."""

    def stream_opened(self, info: StreamInfo) -> None:
        """A connection (or a file pass) starts; packets that follow use ``info``'s time base."""

    def packet(self, packet: EncodedPacket) -> None:
        """One packet, in decode order."""

    def stream_closed(self, reason: str) -> None:
        """The connection ended (failure, end of file, stop): a clip continues with a gap."""

    def unavailable(self, reason: str) -> None:
        """This source has no compressed stream to record; ``reason`` is shown in the camera's status."""
