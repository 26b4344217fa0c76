"""GStreamer pipelines for ``decoder: gstreamer``, as pure data: no GStreamer is imported here.

``plan_pipeline(spec, platform, options)`` turns a parsed source into a ``PipelinePlan``. The
same function serves a Jetson (``nvv4l2decoder`` -> ``nvvidconv`` -> NV12, decoding in the
hardware engine, frames in NVMM memory until the one copy into the appsink) and any other Linux
box (``avdec_h264``/``avdec_h265``/``jpegdec`` from Debian's GStreamer), chosen by which elements
``platform`` says exist.

Why a head and branches instead of one launch line
    The codec of an RTSP stream or a file is only known once the stream is there: rtspsrc learns
    it from the server's SDP (``encoding-name`` on its pad's caps) and ``parsebin`` from the
    container. ``decodebin`` would pick *some* decoder, possibly a slow or broken one, with no say
    over which; instead the head ends in an element with dynamic pads (``demux``) and
    ``gst.source`` links the branch planned for the codec it sees there: depayloader, parser and
    decoder chosen explicitly, and a stream in a codec without a branch is a clear error. It also
    skips an RTSP camera's audio stream, which ``rtspsrc ! ...`` in one line could have linked.

Why user strings are properties, not text in the launch line
    URLs and paths come from the configuration, which the REST API can write. They never enter
    the text handed to GStreamer's parser: the launch line names the element and the string is
    set with ``set_property`` afterwards (``PipelinePlan.properties``), so no quote, ``!`` or
    newline in a source can add an element. ``launch_line`` renders the whole pipeline with the
    values quoted, for logs and for trying it with ``gst-launch-1.0``; it is never executed.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Mapping, Optional, Tuple

from edge_app.config.source_spec import SourceError, SourceKind, SourceSpec

#: the element whose pads carry the streams (rtspsrc, or parsebin after filesrc)
DEMUX_NAME = "demux"
SINK_NAME = "sink"
#: the appsink of a recorded camera's compressed packets, and the tee that feeds it
PACKETS_NAME = "packets"
PACKETS_TEE_NAME = "packets_tee"
#: packets the capture thread has not taken yet before the tee waits (back-pressure, never a
#: drop: a gap would corrupt the recording); the thread takes them on every poll
PACKETS_MAX_BUFFERS = 300
#: where a stream that is not decoded (audio, a second video) goes; queued for the reason in _branch
DISCARD_LIVE = "fakesink sync=false async=false"
DISCARD_FILE = "queue ! fakesink sync=false async=false"

#: where each element comes from, for the error that says what to install
ELEMENT_PACKAGES: Mapping[str, str] = {
    "rtspsrc": "gstreamer1.0-plugins-good", "rtph264depay": "gstreamer1.0-plugins-good",
    "rtph265depay": "gstreamer1.0-plugins-good", "rtpjpegdepay": "gstreamer1.0-plugins-good",
    "v4l2src": "gstreamer1.0-plugins-good", "jpegdec": "gstreamer1.0-plugins-good",
    "h264parse": "gstreamer1.0-plugins-bad", "h265parse": "gstreamer1.0-plugins-bad",
    "jpegparse": "gstreamer1.0-plugins-bad",
    "avdec_h264": "gstreamer1.0-libav", "avdec_h265": "gstreamer1.0-libav",
    "filesrc": "gstreamer1.0-plugins-base", "parsebin": "gstreamer1.0-plugins-base",
    "videoconvert": "gstreamer1.0-plugins-base", "appsink": "gstreamer1.0-plugins-base",
    "videorate": "gstreamer1.0-plugins-base", "tee": "gstreamer1.0 (core)", "queue": "gstreamer1.0 (core)",
    "nvarguscamerasrc": "JetPack (nvidia-l4t-gstreamer)", "nvv4l2decoder": "JetPack (nvidia-l4t-gstreamer)",
    "nvvidconv": "JetPack (nvidia-l4t-gstreamer)", "nvjpegdec": "JetPack (nvidia-l4t-gstreamer)",
}

DEFAULT_LATENCY_MS = 200


class Codec(str, enum.Enum):
    H264 = "h264"
    H265 = "h265"
    JPEG = "jpeg"


class FrameFormat(str, enum.Enum):
    """What the appsink hands over.

    ``BGR``: the consumer wants BGR and converts on the CPU, so software decoders may hand over
    I420 as they decode it (no extra conversion pass in GStreamer). ``NV12``: always NV12, the
    layout of Jetson decoders, for a consumer that converts and letterboxes NV12 on the GPU.
    """

    BGR = "bgr"
    NV12 = "nv12"


class MissingElements(SourceError):
    """The pipeline needs GStreamer elements this machine does not have (never works as is)."""

    def __init__(self, missing: Tuple[str, ...], what: str) -> None:
        packages = sorted({ELEMENT_PACKAGES.get(name, "a GStreamer plugin package") for name in missing})
        super().__init__(f"{what} needs the GStreamer elements {', '.join(missing)}; install {' and '.join(packages)}")
        self.missing = missing


@dataclass(frozen=True)
class GstPlatform:
    """The GStreamer elements a machine has (``gst.source.probe_platform`` fills it in)."""

    elements: FrozenSet[str]
    #: JetPack's nvv4l2decoder decodes MJPEG too when it has the ``mjpeg`` property
    nvv4l2decoder_mjpeg: bool = False

    @property
    def jetson(self) -> bool:
        """Hardware decode: NVIDIA's V4L2 decoder and the NVMM converter are both there."""
        return {"nvv4l2decoder", "nvvidconv"} <= self.elements


@dataclass(frozen=True)
class PipelineOptions:
    latency_ms: int = DEFAULT_LATENCY_MS  # rtspsrc jitter buffer
    open_timeout_s: float = 10.0  # rtspsrc's TCP connect/receive timeout
    frame_format: FrameFormat = FrameFormat.BGR
    #: the camera's fps_limit: frames above it are dropped by ``videorate`` right after the
    #: decoder, before any conversion or copy (0: every frame)
    max_fps: float = 0.0
    #: a recorded camera: H.264/H.265 access units also go to the ``PACKETS_NAME`` appsink
    record: bool = False


@dataclass(frozen=True)
class ElementProperty:
    element: str  # the ``name=`` of an element in the head
    name: str
    value: str


@dataclass(frozen=True)
class PipelinePlan:
    """A pipeline to run: ``head``, then for dynamic sources the branch for the codec found.

    ``branches`` is empty when the head is already the whole pipeline (CSI, USB); otherwise the
    element named ``DEMUX_NAME`` in the head gets a branch linked to its video pad. ``unsupported``
    says why a codec has no branch here (a missing element, with the package to install).
    """

    head: str
    properties: Tuple[ElementProperty, ...]
    branches: Mapping[Codec, str] = field(default_factory=dict)
    unsupported: Mapping[Codec, str] = field(default_factory=dict)
    live: bool = True
    hardware: bool = False
    #: why this pipeline has no compressed packets for a recorder (None: they go to PACKETS_NAME)
    no_packets: Optional[str] = None

    @property
    def dynamic(self) -> bool:
        return bool(self.branches or self.unsupported)

    def launch_line(self, codec: Optional[Codec] = None) -> str:
        """One ``gst-launch-1.0`` line with the properties quoted in: for logs and debugging only."""
        head = self.head
        for prop in self.properties:
            marker = f"name={prop.element}"
            head = head.replace(marker, f"{marker} {prop.name}={quote_value(prop.value)}", 1)
        if not self.dynamic:
            return head
        codec = codec or next(iter(self.branches), None)
        if codec is None or codec not in self.branches:
            return head
        return f"{head} ! {self.branches[codec]}"


def quote_value(value: str) -> str:
    """``value`` as a double-quoted launch-line string (backslash before ``\\`` and ``"``)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def codec_from_caps(media_type: str, encoding_name: Optional[str] = None) -> Optional[Codec]:
    """The codec on a pad: rtspsrc pads say ``application/x-rtp`` with ``encoding-name``,
    parsebin pads the elementary stream's media type. None for anything else (audio, metadata)."""
    if media_type == "application/x-rtp":
        return {"H264": Codec.H264, "H265": Codec.H265, "JPEG": Codec.JPEG}.get((encoding_name or "").upper())
    return {"video/x-h264": Codec.H264, "video/x-h265": Codec.H265, "image/jpeg": Codec.JPEG}.get(media_type)


def _require(platform: GstPlatform, elements: Tuple[str, ...], what: str) -> None:
    missing = tuple(name for name in elements if name not in platform.elements)
    if missing:
        raise MissingElements(missing, what)


def _appsink(live: bool) -> str:
    if live:
        # Only the newest frame matters for a camera: a slow consumer drops, never backs up the
        # decoder or the RTSP jitter buffer. sync=false: hand frames over as soon as decoded.
        return f"appsink name={SINK_NAME} drop=true max-buffers=1 sync=false emit-signals=false"
    # A file is read at the consumer's pace (camera.py paces real-time playback, or takes every
    # frame with realtime: false): back-pressure, never a drop.
    return f"appsink name={SINK_NAME} drop=false max-buffers=2 sync=false emit-signals=false"


def _rate(options: PipelineOptions) -> Tuple[str, Tuple[str, ...]]:
    """Frames above the camera's fps_limit dropped before conversion (nothing when there is none).

    ``max-rate`` is whole frames/s: rounded up, the camera's own gate keeps the exact limit."""
    if options.max_fps <= 0:
        return "", ()
    return f"videorate drop-only=true max-rate={max(1, math.ceil(options.max_fps))} ! ", ("videorate",)


def _packets_branch(codec: Codec) -> str:
    """The tee's second branch: whole access units in Annex B, parameter sets in band."""
    caps = "video/x-h264" if codec is Codec.H264 else "video/x-h265"
    return (f"{PACKETS_TEE_NAME}. ! queue ! {caps},stream-format=byte-stream,alignment=au ! "
            f"appsink name={PACKETS_NAME} drop=false max-buffers={PACKETS_MAX_BUFFERS} sync=false emit-signals=false")


def _convert(platform: GstPlatform, frame_format: FrameFormat) -> Tuple[str, Tuple[str, ...]]:
    """From decoded frames to what the appsink takes, and the elements that needs."""
    if platform.jetson:
        # nvvidconv copies NVMM to system memory; NV12 is the decoder's own layout, so the copy is
        # the only work (colour conversion and letterboxing belong to the GPU after that).
        return "nvvidconv ! video/x-raw,format=NV12", ("nvvidconv",)
    # videoconvert passes buffers through untouched when the decoder already gives an accepted
    # format (avdec_h264: I420); it only works for streams in other layouts (4:2:2 MJPEG, 10 bit).
    formats = "NV12" if frame_format is FrameFormat.NV12 else "{ NV12, I420 }"
    return f"videoconvert ! video/x-raw,format={formats}", ("videoconvert",)


def _decoder(platform: GstPlatform, codec: Codec) -> Tuple[str, Tuple[str, ...]]:
    if platform.jetson:
        if codec is not Codec.JPEG:
            return "nvv4l2decoder", ("nvv4l2decoder",)
        if platform.nvv4l2decoder_mjpeg:
            return "nvv4l2decoder mjpeg=1", ("nvv4l2decoder",)
        if "nvjpegdec" in platform.elements:
            return "nvjpegdec", ("nvjpegdec",)
        return "jpegdec", ("jpegdec",)
    software = {Codec.H264: "avdec_h264", Codec.H265: "avdec_h265", Codec.JPEG: "jpegdec"}[codec]
    return software, (software,)


_PARSERS = {Codec.H264: "h264parse", Codec.H265: "h265parse", Codec.JPEG: "jpegparse"}
_DEPAYLOADERS = {Codec.H264: "rtph264depay", Codec.H265: "rtph265depay", Codec.JPEG: "rtpjpegdepay"}


def _branch(platform: GstPlatform, codec: Codec, options: PipelineOptions, live: bool, rtp: bool) -> str:
    """Depayloader (RTSP), parser, decoder, conversion and appsink for one codec."""
    parts, needed = [], []
    if not live:
        # A file's demuxer feeds every stream from one thread: without a queue a sink waiting for
        # preroll on one stream (the audio's fakesink) would stall the video forever.
        parts.append("queue")
    if rtp:
        parts.append(_DEPAYLOADERS[codec])
        needed.append(_DEPAYLOADERS[codec])
    # The parser turns parsebin's avc/hvc1 or RTP's output into the byte-stream access units the
    # decoders take (a second parser after parsebin's own is a pass-through).
    record = options.record and codec is not Codec.JPEG
    if record:
        # config-interval=-1: SPS/PPS (and VPS) before every keyframe, so a clip cut at any
        # keyframe carries its own parameter sets (StreamInfo.extradata stays empty)
        parts += [f"{_PARSERS[codec]} config-interval=-1", f"tee name={PACKETS_TEE_NAME}", "queue"]
        needed += ["tee", "queue"]
    else:
        parts.append(_PARSERS[codec])
    needed.append(_PARSERS[codec])
    decoder, decoder_needs = _decoder(platform, codec)
    rate, rate_needs = _rate(options)
    convert, convert_needs = _convert(platform, options.frame_format)
    parts += [decoder, f"{rate}{convert}", _appsink(live)]
    needed += [*decoder_needs, *rate_needs, *convert_needs, "appsink"]
    _require(platform, tuple(needed), f"{codec.value.upper()} decoding")
    line = " ! ".join(parts)
    return f"{line} {_packets_branch(codec)}" if record else line


def _branches(platform: GstPlatform, options: PipelineOptions, live: bool, rtp: bool):
    branches: Dict[Codec, str] = {}
    unsupported: Dict[Codec, str] = {}
    for codec in Codec:
        try:
            branches[codec] = _branch(platform, codec, options, live, rtp)
        except MissingElements as err:
            unsupported[codec] = str(err)
    return branches, unsupported


def plan_pipeline(spec: SourceSpec, platform: GstPlatform, options: PipelineOptions = PipelineOptions()) -> PipelinePlan:
    """The pipeline for ``spec`` on ``platform``; raises SourceError (or MissingElements) when
    the GStreamer decoder cannot read this kind of source here."""
    if spec.kind is SourceKind.RTSP:
        _require(platform, ("rtspsrc",), "an RTSP source")
        # TCP like the FFmpeg path: on a lossy link UDP turns into smeared frames, TCP into latency.
        # drop-on-latency: a late packet is dropped rather than stretching the delay without end.
        timeout_us = max(1, int(options.open_timeout_s * 1_000_000))
        head = (f"rtspsrc name={DEMUX_NAME} latency={int(options.latency_ms)} drop-on-latency=true "
                f"protocols=tcp tcp-timeout={timeout_us}")
        branches, unsupported = _branches(platform, options, live=True, rtp=True)
        return PipelinePlan(head, (ElementProperty(DEMUX_NAME, "location", spec.target),), branches, unsupported,
                            live=True, hardware=platform.jetson)
    if spec.kind is SourceKind.FILE:
        # parsebin picks the demuxer (qtdemux, matroskademux, ...) and parser from the content.
        _require(platform, ("filesrc", "parsebin"), "a file source")
        branches, unsupported = _branches(platform, options, live=False, rtp=False)
        return PipelinePlan(f"filesrc name=file ! parsebin name={DEMUX_NAME}",
                            (ElementProperty("file", "location", spec.target),), branches, unsupported,
                            live=False, hardware=platform.jetson)
    if spec.kind is SourceKind.V4L2:
        return _usb_mjpeg(spec, platform, options)
    if spec.kind is SourceKind.CSI:
        return _csi(spec, platform, options)
    raise SourceError(f"decoder gstreamer reads rtsp://, file, csi:// and /dev/video sources, not {spec.kind.value} "
                      "sources; use decoder ffmpeg for them")


def _usb_mjpeg(spec: SourceSpec, platform: GstPlatform, options: PipelineOptions) -> PipelinePlan:
    # USB cameras deliver their full resolution and frame rate only as MJPEG over USB 2; raw YUYV
    # cameras stay with decoder ffmpeg (OpenCV's V4L2 backend), which auto picks for them.
    decoder, decoder_needs = _decoder(platform, Codec.JPEG)
    convert, convert_needs = _convert(platform, options.frame_format)
    _require(platform, ("v4l2src", *decoder_needs, *convert_needs, "appsink"), "a USB MJPEG camera")
    rate, rate_needs = _rate(options)
    _require(platform, rate_needs, "an fps_limit")
    head = f"v4l2src name=camera ! image/jpeg ! {decoder} ! {rate}{convert} ! {_appsink(True)}"
    return PipelinePlan(head, (ElementProperty("camera", "device", spec.target),), live=True,
                        hardware=platform.jetson and decoder != "jpegdec",
                        no_packets="USB cameras send MJPEG, which is not recorded without re-encoding")


def _csi(spec: SourceSpec, platform: GstPlatform, options: PipelineOptions) -> PipelinePlan:
    rate, rate_needs = _rate(options)
    _require(platform, ("nvarguscamerasrc", "nvvidconv", "appsink", *rate_needs), "a CSI camera (csi://)")
    opts = spec.options
    sensor_id, width, height, fps = (int(opts.get(key, default)) for key, default in
                                     (("sensor_id", 0), ("width", 1920), ("height", 1080), ("fps", 30)))
    # Argus already delivers NV12 in NVMM memory: nvvidconv only copies it out.
    head = (f"nvarguscamerasrc sensor-id={sensor_id} ! "
            f"video/x-raw(memory:NVMM),width={width},height={height},framerate={fps}/1 ! "
            f"{rate}nvvidconv ! video/x-raw,format=NV12 ! {_appsink(True)}")
    return PipelinePlan(head, (), live=True, hardware=True,
                        no_packets="CSI cameras deliver raw frames; there is no compressed stream to copy")
