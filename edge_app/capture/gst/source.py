"""``GstSource``: a FrameSource that runs a ``gst.pipeline`` plan with PyGObject.

Why PyGObject and not OpenCV's GStreamer backend
    ``cv2.VideoCapture(..., CAP_GSTREAMER)`` wants one launch line and hands over BGR: the URL
    would have to be pasted into the line (see gst.pipeline on why it must not), the codec chosen
    before the stream is seen, errors arrive as a bare ``False`` without the bus message, and
    the NV12 frames a GPU could convert itself are turned into BGR on the CPU first. PyPI's OpenCV
    has no GStreamer at all. PyGObject (``gi``) is JetPack's own ``python3-gi`` on a Jetson (a
    venv made with ``--system-site-packages`` sees it) and ``pip install 'edge-app[gstreamer]'``
    elsewhere.

Behaviour, as the OpenCV sources
    Opening waits for the first frame (at most ``open_timeout_s``); a bus ERROR, or no frame in
    time, raises ``SourceUnavailable`` and the camera reconnects with backoff. ``read`` waits at
    most ``read_timeout_s`` for a frame, in short slices between which it checks the bus: an
    ERROR raises ``SourceUnavailable``, end of stream and silence return None, so camera.py's
    reconnect, end-of-file and stall handling apply unchanged and no call blocks for good.
    Streams in a codec without a decoder here raise ``SourceError`` (retrying cannot help).
    ``release`` sets the pipeline to NULL, which stops its threads and closes the connection.

Frames arrive as NV12 (I420 from software decoders when BGR is wanted). ``read`` returns BGR
(``cv2.cvtColor``) by default; ``frame_format=FrameFormat.NV12`` returns the NV12 planes as one
``(height * 3 // 2, width)`` uint8 array instead, for a consumer that converts on the GPU.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
import time
from typing import Any, Optional, Tuple

import numpy as np

from edge_app.capture.gst.pipeline import (
    DEMUX_NAME, DISCARD_FILE, DISCARD_LIVE, PACKETS_NAME, SINK_NAME, ELEMENT_PACKAGES, FrameFormat, GstPlatform, PipelineOptions, PipelinePlan,
    Codec, codec_from_caps, plan_pipeline,
)
from edge_app.capture.gst.packets import GstPackets
from edge_app.capture.packets import PacketSink
from edge_app.capture.sources import SourceUnavailable, frame_too_large
from edge_app.capture.gpu_image import HostNv12Image
from edge_app.config.source_spec import SourceError, SourceKind, SourceSpec
from edge_app.config.redact import mask_secrets
from edge_app.opencv import opencv

logger = logging.getLogger(__name__)

NO_GI_MESSAGE = (
    "decoder gstreamer needs PyGObject with GStreamer 1.x: on a Jetson create the venv with "
    "--system-site-packages (JetPack ships python3-gi); elsewhere apt-get install gir1.2-gstreamer-1.0 "
    "gir1.2-gst-plugins-base-1.0 libgirepository1.0-dev libcairo2-dev pkg-config, then pip install "
    "'edge-app[gstreamer]'"
)
POLL_SLICE_S = 0.1
NS_PER_S = 1_000_000_000


class GstUnavailable(SourceError):
    """PyGObject or GStreamer cannot be imported here."""


def _keep_gcc_unwinder_first() -> None:
    """Put libgcc_s's unwinder in the global symbol scope before GStreamer's libunwind.

    Debian's libgstreamer links libunwind, and PyGObject loads it globally: C++ libraries loaded
    before (ONNX Runtime, OpenCV) then bind ``_Unwind_Resume`` lazily to libunwind's, and their
    first exception (a corrupt model, a cv2.error) aborts the whole process. With libgcc_s global
    first, symbol lookup finds its unwinder, which matches their exception personality.
    """
    try:
        ctypes.CDLL("libgcc_s.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:  # not a glibc/GCC system: nothing to protect
        pass


def import_gst() -> Tuple[Any, Any]:
    """(Gst, GstVideo), initialised; raises GstUnavailable naming what to install."""
    _keep_gcc_unwinder_first()
    try:
        import gi

        gi.require_version("Gst", "1.0")
        gi.require_version("GstVideo", "1.0")
        from gi.repository import Gst, GstVideo
    except (ImportError, ValueError) as err:
        raise GstUnavailable(f"{NO_GI_MESSAGE} ({err})") from None
    if not Gst.is_initialized():
        Gst.init(None)
    return Gst, GstVideo


@functools.lru_cache(maxsize=1)
def probe_platform() -> GstPlatform:
    """The elements this machine's GStreamer registry has (read once; plugins do not change)."""
    Gst, _ = import_gst()
    names = set(ELEMENT_PACKAGES) | {"fakesink"}
    elements = frozenset(name for name in names if Gst.ElementFactory.find(name) is not None)
    mjpeg = False
    if "nvv4l2decoder" in elements:
        decoder = Gst.ElementFactory.make("nvv4l2decoder", None)
        mjpeg = decoder is not None and decoder.find_property("mjpeg") is not None
    return GstPlatform(elements, nvv4l2decoder_mjpeg=mjpeg)


def _packed_planes(data: np.ndarray, fmt: str, width: int, height: int, strides, offsets) -> np.ndarray:
    """The planes of one frame without row padding, as one ``(height * 3 // 2, width)`` array."""
    def plane(index: int, rows: int, cols: int) -> np.ndarray:
        start, stride = offsets[index], strides[index]
        return data[start:start + stride * rows].reshape(rows, stride)[:, :cols]

    out = np.empty((height * 3 // 2, width), np.uint8)
    out[:height] = plane(0, height, width)
    if fmt == "NV12":
        out[height:] = plane(1, height // 2, width)
    else:  # I420: U then V, each a quarter of the picture, packed one after the other
        chroma = out[height:].reshape(-1)
        quarter = (height // 2) * (width // 2)
        chroma[:quarter] = plane(1, height // 2, width // 2).reshape(-1)
        chroma[quarter:] = plane(2, height // 2, width // 2).reshape(-1)
    return out


def _video_info(GstVideo: Any, caps: Any) -> Any:
    """GstVideo.VideoInfo for ``caps``, or None; ``new_from_caps`` is GStreamer 1.20+ (JetPack 5
    has 1.16, where ``from_caps`` fills the info in, or returns it with the flag)."""
    if hasattr(GstVideo.VideoInfo, "new_from_caps"):
        return GstVideo.VideoInfo.new_from_caps(caps)
    info = GstVideo.VideoInfo()
    result = info.from_caps(caps)
    if isinstance(result, tuple):
        ok, info = result
        return info if ok else None
    return info if result else None


class GstSource:
    """An open GStreamer pipeline behind the FrameSource interface."""

    def __init__(self, spec: SourceSpec, open_timeout_s: float = 10.0, read_timeout_s: float = 10.0,
                 frame_format: FrameFormat = FrameFormat.BGR, platform: Optional[GstPlatform] = None,
                 packet_sink: Optional[PacketSink] = None, max_fps: float = 0.0) -> None:
        """``packet_sink``: a recorded camera's (``gst.packets``); ``max_fps``: the camera's
        fps_limit, applied by ``videorate`` before the frames are converted."""
        self._Gst, self._GstVideo = import_gst()
        if spec.kind is SourceKind.FILE and not os.path.isfile(spec.target):
            raise SourceUnavailable(f"file {spec.target} does not exist")
        if spec.kind is SourceKind.V4L2 and not os.path.exists(spec.target):
            raise SourceUnavailable(f"device {spec.target} does not exist (not plugged in?)")
        options = PipelineOptions(open_timeout_s=open_timeout_s, frame_format=frame_format, max_fps=max_fps,
                                  record=packet_sink is not None)
        self.plan: PipelinePlan = plan_pipeline(spec, platform or probe_platform(), options)
        self.live = spec.live
        self.fps = 0.0
        self.frame_format = frame_format
        self._masked = mask_secrets(spec.target)
        self._read_timeout_s = read_timeout_s
        self._lock = threading.Lock()
        self._sink: Any = None
        self._fatal: Optional[str] = None  # set from GStreamer's streaming threads
        self._linked_video = False
        self.codec: Optional[Codec] = None  # of the stream being decoded, once known
        self._pending: Optional[np.ndarray] = None
        self._packets = GstPackets(self._Gst, packet_sink, self.plan.no_packets) if packet_sink is not None else None
        self._pipeline = self._build()
        try:
            self._start(open_timeout_s)
        except BaseException:
            self.release()
            raise

    # ------------------------------------------------------------------ FrameSource

    def read(self) -> Optional[np.ndarray]:
        if self._pending is not None:
            image, self._pending = self._pending, None
            return image
        return self._pull(self._read_timeout_s)

    def grab(self) -> bool:
        """The next frame taken without copying it out of GStreamer's buffer or converting it (a
        frame the camera will not analyse); False at the end or when none came, like ``read``."""
        if self._pending is not None:
            self._pending = None
            return True
        return self._pull(self._read_timeout_s, convert=False) is not None

    def release(self) -> None:
        if self._packets is not None:
            self._packets.close("source closed")
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.set_state(self._Gst.State.NULL)

    # --------------------------------------------------------------------- building

    def _build(self) -> Any:
        Gst = self._Gst
        try:
            pipeline = Gst.parse_launch(self.plan.head)
        except Exception as err:  # GLib.Error: an element or property this GStreamer lacks
            raise SourceError(f"GStreamer cannot build the pipeline {self.plan.head!r}: {err}") from None
        if not isinstance(pipeline, Gst.Pipeline):  # parse_launch returns a bare element for one element
            single, pipeline = pipeline, Gst.Pipeline.new(None)
            pipeline.add(single)
        for prop in self.plan.properties:
            pipeline.get_by_name(prop.element).set_property(prop.name, prop.value)
        if self.plan.dynamic:
            demux = pipeline.get_by_name(DEMUX_NAME)
            demux.connect("pad-added", self._on_pad_added)
            demux.connect("no-more-pads", self._on_no_more_pads)
        else:
            self._sink = pipeline.get_by_name(SINK_NAME)
        return pipeline

    def _start(self, open_timeout_s: float) -> None:
        logger.debug("starting %s", mask_secrets(self.plan.launch_line()))
        if self._pipeline.set_state(self._Gst.State.PLAYING) == self._Gst.StateChangeReturn.FAILURE:
            self._raise_bus_error(f"cannot open {self._masked}: the pipeline refused to start")
        first = self._pull(open_timeout_s, opening=True)
        if first is None:
            raise SourceUnavailable(f"cannot open {self._masked}: no frame within {open_timeout_s:g} s")
        self._pending = first

    def _on_pad_added(self, _demux: Any, pad: Any) -> None:
        """Runs on a GStreamer streaming thread: link the branch for the pad's codec."""
        caps = pad.get_current_caps() or pad.query_caps(None)
        structure = caps.get_structure(0)
        media_type = structure.get_name()
        encoding = structure.get_string("encoding-name") if structure.has_field("encoding-name") else None
        is_video = media_type.startswith(("video/", "image/")) or (
            structure.has_field("media") and structure.get_string("media") == "video")
        codec = codec_from_caps(media_type, encoding)
        with self._lock:
            take = is_video and not self._linked_video
            if take:
                self._linked_video = True
        if not take:
            self._discard(pad)  # audio, metadata, a second video stream
            return
        if codec is None:
            self._fail_fatal(f"{self._masked} sends {encoding or media_type} video; decoder gstreamer decodes "
                             "H.264, H.265 and MJPEG: use decoder ffmpeg for it")
            self._discard(pad)
            return
        if codec in self.plan.unsupported:
            self._fail_fatal(self.plan.unsupported[codec])
            self._discard(pad)
            return
        branch = self._Gst.parse_bin_from_description(self.plan.branches[codec], True)
        self._pipeline_add(branch)
        if pad.link(branch.get_static_pad("sink")) != self._Gst.PadLinkReturn.OK:
            self._fail_fatal(f"cannot link the {codec.value} decoder to {self._masked}")
            return
        logger.debug("%s: %s stream, branch %s", self._masked, codec.value, self.plan.branches[codec])
        if self._packets is not None:
            self._packets.attach(branch.get_by_name(PACKETS_NAME))
            if codec is Codec.JPEG:
                self._packets.none("the stream is MJPEG, which is not recorded without re-encoding")
        with self._lock:
            self.codec = codec
            self._sink = branch.get_by_name(SINK_NAME)

    def _on_no_more_pads(self, _demux: Any) -> None:
        with self._lock:
            found = self._linked_video
        if not found:
            self._fail_fatal(f"{self._masked} has no video stream")

    def _discard(self, pad: Any) -> None:
        sink = self._Gst.parse_bin_from_description(DISCARD_LIVE if self.live else DISCARD_FILE, True)
        self._pipeline_add(sink)
        pad.link(sink.get_static_pad("sink"))

    def _pipeline_add(self, element: Any) -> None:
        pipeline = self._pipeline
        if pipeline is None:
            return
        pipeline.add(element)
        element.sync_state_with_parent()

    def _fail_fatal(self, message: str) -> None:
        with self._lock:
            if self._fatal is None:
                self._fatal = message

    # ---------------------------------------------------------------------- reading

    def _pull(self, timeout_s: float, opening: bool = False, convert: bool = True) -> Any:
        """The next frame within ``timeout_s`` (``convert`` False: True for it); None at end of
        stream or when none came."""
        deadline_s = time.monotonic() + timeout_s
        while self._pipeline is not None:
            self._check_bus(opening)
            with self._lock:
                fatal, sink = self._fatal, self._sink
            if fatal:
                raise SourceError(fatal)
            self._take_packets()
            remaining_s = deadline_s - time.monotonic()
            if remaining_s <= 0:
                return None
            slice_s = min(POLL_SLICE_S, remaining_s)
            if sink is None:  # the stream's pads are not there yet
                time.sleep(slice_s)
                continue
            sample = sink.emit("try-pull-sample", int(slice_s * NS_PER_S))
            if sample is not None:
                return self._image(sample) if convert else True
            if sink.get_property("eos"):
                self._check_bus(opening)
                self._take_packets()  # the last ones passed the tee before the last frame
                return None
        return None

    def _take_packets(self) -> None:
        """A recorded camera's packets go to its sink on the capture thread, never GStreamer's."""
        if self._packets is not None:
            self._packets.drain()

    def _check_bus(self, opening: bool) -> None:
        bus = self._pipeline.get_bus()
        Gst = self._Gst
        while True:
            message = bus.pop_filtered(Gst.MessageType.ERROR | Gst.MessageType.WARNING)
            if message is None:
                return
            if message.type == Gst.MessageType.WARNING:
                warning, _ = message.parse_warning()
                logger.debug("%s: GStreamer warning from %s: %s", self._masked, message.src.get_name(), warning.message)
                continue
            error, debug = message.parse_error()
            logger.debug("%s: GStreamer error from %s: %s (%s)", self._masked, message.src.get_name(), error.message, debug)
            if opening:
                raise SourceUnavailable(f"cannot open {self._masked}: {error.message}")
            raise SourceUnavailable(f"GStreamer {message.src.get_name()}: {error.message}")

    def _raise_bus_error(self, fallback: str) -> None:
        self._check_bus(True)
        raise SourceUnavailable(fallback)

    def _image(self, sample: Any) -> np.ndarray:
        GstVideo = self._GstVideo
        caps = sample.get_caps()
        info = _video_info(GstVideo, caps)
        if info is None:
            raise SourceError(f"{self._masked}: unreadable frame caps {caps.to_string()}")
        width, height = info.width, info.height
        too_large = frame_too_large(width, height)
        if too_large:
            raise SourceError(too_large)
        if width % 2 or height % 2:
            raise SourceError(f"{self._masked} sends {width}x{height} frames; 4:2:0 frames need an even size: "
                              "use decoder ffmpeg for this stream")
        if not self.fps and info.fps_d:
            self.fps = info.fps_n / info.fps_d
        fmt = info.finfo.name  # "NV12" or "I420", as the appsink caps allow
        buffer = sample.get_buffer()
        meta = GstVideo.buffer_get_video_meta(buffer)
        strides, offsets = (meta.stride, meta.offset) if meta is not None else (info.stride, info.offset)
        data = np.frombuffer(buffer.extract_dup(0, buffer.get_size()), np.uint8)
        planes = _packed_planes(data, fmt, width, height, strides, offsets)
        if self.frame_format is FrameFormat.NV12:
            return planes
        cv2 = opencv()

        code = cv2.COLOR_YUV2BGR_NV12 if fmt == "NV12" else cv2.COLOR_YUV2BGR_I420
        return cv2.cvtColor(planes, code)


class Nv12Frames:
    """A GstSource in NV12 mode whose frames are :class:`HostNv12Image`: the GPU letterbox reads
    them as NV12, everything else converts to BGR through the one accessor, on demand."""

    def __init__(self, source: GstSource) -> None:
        if source.frame_format is not FrameFormat.NV12:
            raise ValueError("Nv12Frames needs a GstSource opened with FrameFormat.NV12")
        self.source = source

    @property
    def fps(self) -> float:
        return self.source.fps

    @property
    def live(self) -> bool:
        return self.source.live

    def read(self) -> Optional[HostNv12Image]:
        planes = self.source.read()
        return None if planes is None else HostNv12Image(planes)

    def grab(self) -> bool:
        return self.source.grab()

    def release(self) -> None:
        self.source.release()
