"""A recorded camera's compressed packets out of decoder gstreamer's pipeline.

``gst.pipeline`` plans a ``tee`` right after the parser of a recorded H.264/H.265 stream: one
branch decodes, the other ends in the appsink ``PACKETS_NAME`` with whole access units in Annex
B (``stream-format=byte-stream,alignment=au``), parameter sets in band before every keyframe
(``config-interval=-1``). ``GstPackets`` takes them out on the capture thread, on every poll of
``GstSource`` for a frame, and hands them to the camera's ``PacketSink``: the same connection,
the same demuxer as the analysed frames.

Timestamps are GStreamer's, in nanoseconds (``StreamInfo.time_base`` 1/1e9); a buffer without a
presentation time gets its decode time, one without either the last plus its duration.
"""
from __future__ import annotations

import threading
import time
from fractions import Fraction
from typing import Any, Callable, Optional

from edge_app.capture.packets import EncodedPacket, PacketSink, StreamInfo

NS_TIME_BASE = Fraction(1, 1_000_000_000)
#: codec names of the packets' caps, as FFmpeg names them (what StreamInfo.codec holds)
CAPS_CODECS = {"video/x-h264": "h264", "video/x-h265": "hevc"}


class GstPackets:
    """Moves samples from the packets appsink to a sink; ``drain`` on the capture thread only."""

    def __init__(self, Gst: Any, sink: PacketSink, no_packets: Optional[str] = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._Gst = Gst
        self._sink = sink
        self._clock = clock
        self._lock = threading.Lock()
        #: why there are no packets (a USB, CSI or MJPEG pipeline), said to the sink at the next drain
        self._no_packets = no_packets
        self._appsink: Any = None
        self._open = False
        self._last_dts: Optional[int] = None
        self.packets = 0

    def attach(self, appsink: Any) -> None:
        """The packets appsink of the branch just linked (GStreamer's streaming thread)."""
        self._appsink = appsink

    def none(self, reason: str) -> None:
        """The linked branch has no packets to record (GStreamer's streaming thread)."""
        with self._lock:
            self._no_packets = reason

    def drain(self) -> None:
        """Hand over every packet waiting in the appsink, without waiting for more."""
        with self._lock:
            no_packets, self._no_packets = self._no_packets, None
        if no_packets is not None:
            self._sink.unavailable(f"recording unavailable: {no_packets}")
        appsink = self._appsink
        if appsink is None:
            return
        while True:
            sample = appsink.emit("try-pull-sample", 0)
            if sample is None:
                return
            self._take(sample)

    def close(self, reason: str) -> None:
        if self._open:
            self._open = False
            self._sink.stream_closed(reason)

    def _take(self, sample: Any) -> None:
        if not self._open:
            self._opened(sample.get_caps())
        buffer = sample.get_buffer()
        none = self._Gst.CLOCK_TIME_NONE
        duration = int(buffer.duration) if buffer.duration != none else 0
        dts = buffer.dts if buffer.dts != none else buffer.pts
        if dts == none:
            dts = 0 if self._last_dts is None else self._last_dts + max(duration, 1)
        dts = int(dts)
        if self._last_dts is not None and dts <= self._last_dts:
            dts = self._last_dts + 1
        pts = max(int(buffer.pts), dts) if buffer.pts != none else dts
        self._last_dts = dts
        keyframe = not buffer.has_flags(self._Gst.BufferFlags.DELTA_UNIT)
        self.packets += 1
        self._sink.packet(EncodedPacket(buffer.extract_dup(0, buffer.get_size()), pts, dts, keyframe,
                                        self._clock(), duration))

    def _opened(self, caps: Any) -> None:
        structure = caps.get_structure(0)
        ok_w, width = structure.get_int("width")
        ok_h, height = structure.get_int("height")
        ok_rate, rate_num, rate_den = structure.get_fraction("framerate")
        fps = rate_num / rate_den if ok_rate and rate_den else 0.0
        self._sink.stream_opened(StreamInfo(
            camera_id="", codec=CAPS_CODECS.get(structure.get_name(), structure.get_name()),
            width_px=width if ok_w else 0, height_px=height if ok_h else 0, time_base=NS_TIME_BASE,
            extradata=b"", fps=fps))
        self._open = True
