"""``decoder: ffmpeg`` for a recorded camera: demuxed once by PyAV, packets teed, decoded on the CPU.

OpenCV's ``VideoCapture`` hides its packets, and a second connection for the recorder is what
many RTSP cameras refuse (two or three sessions in all). So when a camera has a ``PacketSink``,
its RTSP, HTTP or file source is read with PyAV instead: every demuxed packet goes to the sink
(``pyav.container.PacketTap``) and then to FFmpeg's software decoder, and ``read`` hands over BGR
frames as ``OpenCVSource`` does. Without a sink nothing changes: OpenCV reads the source.

Frames the camera's gate skips (``fps_limit``, motion idle) come through ``grab``: the packet is
still recorded and decoded where later pictures need it, but with ``skip_frame = NONREF`` a
picture no other picture refers to (B-frames, non-reference P-frames) is not decoded at all,
and no grabbed picture is converted to BGR or copied out. bench/cpu/frame_drop_cost.py measures
what each saves (results in bench/README.md).

Decoding uses one FFmpeg thread, like the OpenCV path: FFmpeg's frame threads cost more CPU per
frame than they save on an edge box whose cores the detector needs, and add a frame of latency
per thread.

Sources without a compressed stream to record (``test://``, USB cameras, ``csi://``, ``gst:``
pipelines) keep their usual reader and tell the sink once why they cannot be recorded; so does a
stream in a codec that is not recorded by copy (MJPEG, still images).
"""
from __future__ import annotations

import logging
from typing import Any, Iterator, Optional

import numpy as np

from edge_app.capture.pyav.container import PacketTap, PyAvMissing, import_av, open_video, stream_fps
from edge_app.capture.packets import PacketSink
from edge_app.capture.sources import FrameSource, SourceError, frame_too_large, open_source
from edge_app.config.source_spec import SourceKind, SourceSpec
from edge_app.config.redact import mask_secrets

logger = logging.getLogger(__name__)

#: sources PyAV reads (and whose packets can be recorded)
AV_KINDS = (SourceKind.RTSP, SourceKind.HTTP, SourceKind.FILE)
#: why the other kinds have no packets to record, for the camera's status
NO_PACKETS = {
    SourceKind.TEST: "test:// sources are drawn frame by frame and have no compressed stream",
    SourceKind.V4L2: "USB cameras are read as raw frames; there is no compressed stream to copy",
    SourceKind.CSI: "CSI cameras deliver raw frames; there is no compressed stream to copy",
    SourceKind.GSTREAMER: "a gst: pipeline is the operator's own and hands over decoded frames only",
}
#: FFmpeg's ``skip_frame`` for a frame that will be analysed, and one that will not
DECODE_ALL, DECODE_REFERENCES = "DEFAULT", "NONREF"
#: what one demuxed packet was
PICTURE, FLUSH, END = "picture", "flush", "end"


class AvSource:
    """A FrameSource over PyAV: ``read`` gives BGR images, ``grab`` decodes as little as it can."""

    def __init__(self, spec: SourceSpec, open_timeout_s: float = 10.0, read_timeout_s: float = 10.0,
                 packet_sink: Optional[PacketSink] = None, threads: int = 1) -> None:
        av = import_av("recording a camera with decoder ffmpeg", "pip install av")
        self._errors = (av.error.InvalidDataError,)
        self.live = spec.live
        self._what = mask_secrets(spec.target)
        self._container, stream = open_video(av, spec.target, open_timeout_s, read_timeout_s)
        try:
            context = self._context = stream.codec_context
            too_large = frame_too_large(int(context.width or 0), int(context.height or 0))
            if too_large:
                raise SourceError(too_large)
            context.thread_count = max(1, int(threads))
            self.fps = stream_fps(stream)
            self._tap = PacketTap(packet_sink, stream)
            self._packets: Iterator[Any] = self._container.demux(stream)
            self._ready: list = []
            self._skip = DECODE_ALL
            self._ended = False
            self.corrupt_packets = 0
        except BaseException:
            self._container.close()
            raise
        self._tap.opened()

    def read(self) -> Optional[np.ndarray]:
        """The next picture as BGR, or None at the end of the stream."""
        self._decode_as(DECODE_ALL)
        while not self._ready:
            if self._next_packet() == END:
                return None
        frame = self._ready.pop(0)
        image = frame.to_ndarray(format="bgr24")
        too_large = frame_too_large(image.shape[1], image.shape[0])
        if too_large:
            raise SourceError(too_large)
        return image

    def grab(self) -> bool:
        """One packet's worth of stream taken in without a picture out: recorded, decoded only
        where later pictures need it, never converted. False at the end of the stream."""
        self._decode_as(DECODE_REFERENCES)
        while not self._ready:
            taken = self._next_packet(keep=False)
            if taken != FLUSH:  # the decoder's last pictures, if any, are in _ready
                return taken == PICTURE
        self._ready.pop(0)
        return True

    def release(self) -> None:
        self._ready = []
        self._tap.closed("source closed")
        self._container.close()

    @property
    def packets_recorded(self) -> int:
        return self._tap.packets

    def _decode_as(self, skip: str) -> None:
        if skip != self._skip:
            self._context.skip_frame = skip
            self._skip = skip

    def _next_packet(self, keep: bool = True) -> str:
        """Demux and decode one packet: PICTURE, FLUSH (the end-of-stream packet; the decoder's
        delayed pictures are kept whatever ``keep`` says) or END."""
        if self._ended:
            return END
        packet = next(self._packets, None)
        if packet is None:
            self._ended = True
            return END
        self._tap.tap(packet)
        try:
            frames = self._context.decode(packet)  # an empty packet at the end flushes the decoder
        except self._errors as err:  # one damaged packet (a loss on the way): FFmpeg recovers at the next
            self.corrupt_packets += 1
            logger.debug("%s: undecodable packet skipped: %s", self._what, err)
            return PICTURE
        if keep or packet.size == 0:
            self._ready.extend(frames)
        return PICTURE if packet.size else FLUSH


def open_recorded(spec: SourceSpec, open_timeout_s: float, read_timeout_s: float,
                  packet_sink: PacketSink) -> FrameSource:
    """The ffmpeg decoder's source for a camera that is recorded (see the module's docstring)."""
    if spec.kind in AV_KINDS:
        try:
            return AvSource(spec, open_timeout_s, read_timeout_s, packet_sink)
        except PyAvMissing as err:  # the analysis must not stop because the recorder's library is missing
            packet_sink.unavailable(f"recording unavailable: {err}")
    reason = NO_PACKETS.get(spec.kind)
    if reason is not None:
        packet_sink.unavailable(f"recording unavailable: {reason}")
    return open_source(spec, open_timeout_s=open_timeout_s, read_timeout_s=read_timeout_s)
