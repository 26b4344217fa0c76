"""Opening a camera with PyAV (FFmpeg's libraries), and teeing its packets to a ``PacketSink``.

Shared by the two PyAV readers: ``pyav.demux.AvDemuxer`` (packets for NVDEC) and
``pyav.source.AvSource`` (decoded on the CPU). Both demux once; every packet they read is handed
to the camera's ``PacketSink`` (``edge_app.capture.packets``) before it is decoded, so the
recorder gets exactly the stream the analysis sees, over the same connection.

Errors follow the OpenCV path: cannot connect -> ``SourceUnavailable`` (retried with backoff),
a stream that can never be read -> ``SourceError``.
"""
from __future__ import annotations

import os
import time
from fractions import Fraction
from typing import Any, Callable, Dict, Optional

from edge_app.capture.packets import RECORDABLE_CODECS, EncodedPacket, PacketSink, StreamInfo
# The environment variable the OpenCV path reads FFmpeg options from is honoured here too.
from edge_app.capture.sources import FFMPEG_OPTIONS_ENV, SourceError, SourceUnavailable
from edge_app.config.redact import mask_secrets



def ffmpeg_options(target: str, environ: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """FFmpeg options for ``target``: RTSP over TCP unless the operator's own options say otherwise.

    The operator's options use OpenCV's format, ``key;value|key;value``, so one setting serves
    every decoder. A local file (``parse_source`` writes every file target as an absolute or a
    ``./`` path) is read with the file protocol only, whatever those options say: the folder rules
    checked that file, and FFmpeg must not read anything else for it.
    """
    environ = os.environ if environ is None else environ
    options: Dict[str, str] = {}
    if target.lower().startswith(("rtsp://", "rtsps://")):
        options["rtsp_transport"] = "tcp"
    for item in environ.get(FFMPEG_OPTIONS_ENV, "").split("|"):
        key, sep, value = item.partition(";")
        if sep and key.strip():
            options[key.strip()] = value.strip()
    if target.startswith(("/", "./")):
        options["protocol_whitelist"] = "file"
    return options


class PyAvMissing(SourceError):
    """PyAV is not installed."""


def import_av(what: str, install: str) -> Any:
    """The ``av`` module, or a SourceError naming what needed it and what to install."""
    try:
        import av
    except ImportError as err:
        raise PyAvMissing(f"{what} reads streams with PyAV, which is not installed ({err}); {install}") from None
    return av


def open_video(av: Any, target: str, open_timeout_s: float, read_timeout_s: float,
               options: Optional[Dict[str, str]] = None) -> Any:
    """(container, its first video stream); the container is closed again on any error."""
    masked = mask_secrets(target)
    try:
        container = av.open(target, options=ffmpeg_options(target) if options is None else options,
                            timeout=(float(open_timeout_s), float(read_timeout_s)))
    except (av.error.FFmpegError, OSError) as err:
        raise SourceUnavailable(f"cannot open {masked}: {mask_secrets(str(err))}") from None
    videos = container.streams.video
    if not videos:
        container.close()
        raise SourceError(f"{masked} has no video stream")
    return container, videos[0]


def stream_fps(stream: Any) -> float:
    rate = stream.average_rate or stream.guessed_rate or 0
    return float(rate) if rate else 0.0


class PacketTap:
    """Hands the packets of one connection's video stream to a sink (or to nothing).

    ``opened`` announces the stream (or says why it cannot be recorded), ``tap`` forwards one
    demuxed packet. Timestamps are made usable by a muxer: a packet without them gets the last
    ones plus its duration, and decode timestamps only grow within the connection (FFmpeg's RTSP
    demuxer repeats one now and then after a loss).
    """

    def __init__(self, sink: Optional[PacketSink], stream: Any, clock: Callable[[], float] = time.time) -> None:
        self._sink = sink
        self._stream = stream
        self._clock = clock
        self._active = False
        self._last_dts: Optional[int] = None
        self.packets = 0

    def opened(self) -> None:
        if self._sink is None:
            return
        stream = self._stream
        context = stream.codec_context
        codec = str(context.name)
        if codec not in RECORDABLE_CODECS:
            self._sink.unavailable(f"recording unavailable: the stream is {codec}; "
                                   f"only {' and '.join(RECORDABLE_CODECS)} are recorded without re-encoding")
            return
        time_base = stream.time_base or Fraction(1, 90000)
        self._sink.stream_opened(StreamInfo(
            camera_id="", codec=codec, width_px=int(context.width or 0), height_px=int(context.height or 0),
            time_base=Fraction(time_base.numerator, time_base.denominator),
            extradata=bytes(context.extradata or b""), fps=stream_fps(stream), template=stream))
        self._active = True

    def tap(self, packet: Any) -> None:
        if not self._active or packet.size == 0:
            return
        duration = int(packet.duration or 0)
        dts = packet.dts if packet.dts is not None else packet.pts
        if dts is None:
            dts = 0 if self._last_dts is None else self._last_dts + max(duration, 1)
        if self._last_dts is not None and dts <= self._last_dts:
            dts = self._last_dts + 1
        pts = max(int(packet.pts), dts) if packet.pts is not None else dts
        self._last_dts = dts
        self.packets += 1
        self._sink.packet(EncodedPacket(bytes(packet), pts, dts, bool(packet.is_keyframe), self._clock(), duration))

    def closed(self, reason: str) -> None:
        if self._active:
            self._active = False
            self._sink.stream_closed(reason)
