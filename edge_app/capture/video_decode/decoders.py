"""Decoders: which ones this device has, what ``decoder: auto`` picks, and how each opens a source.

``cameras[].decoder`` (docs/configuration.md) is ``auto``, ``ffmpeg``, ``gstreamer`` or ``nvdec``:

* ``ffmpeg``: OpenCV's ``VideoCapture`` (FFmpeg for streams and files, V4L2 for USB cameras,
  its GStreamer backend for ``csi://`` and ``gst:``): the path that works everywhere.
* ``gstreamer``: ``gst.source.GstSource``, our own pipeline through PyGObject: hardware decode
  with ``nvv4l2decoder`` on a Jetson, Debian's software decoders elsewhere.
* ``nvdec``: NVIDIA's decoder on dGPU hosts through PyNvVideoCodec (``nvdec_source``), in a
  decoder process per camera (``child_process``): frames stay in device memory as NV12 up to
  the engine input.

``auto``: a Jetson whose GStreamer has ``nvv4l2decoder`` decodes RTSP, files and CSI cameras with
gstreamer; a dGPU host with PyNvVideoCodec uses nvdec where it has an opener; everything else,
and every source the chosen decoder does not read (``http``, ``gst:``, USB cameras, which may not
speak MJPEG), uses ffmpeg. ``test://`` sources are drawn in Python whatever the decoder.

``CameraOpener`` is what ``CameraWorker`` calls: it resolves the configured decoder for the
source and dispatches through a plain dict of decoder name -> opener function.

A recorded camera's opener is called with ``packet_sink=``: every decoder then tees the
compressed packets of the one connection it reads to the sink (docs/recording-sources.md):
ffmpeg reads RTSP, HTTP and files with PyAV instead of OpenCV (``pyav.source``), gstreamer adds a
``tee`` after the parser (``gst.packets``), nvdec tees its PyAV demuxer (``pyav.demux``).
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from edge_app.capture.gst.pipeline import Codec, FrameFormat, plan_pipeline
from edge_app.capture.packets import PacketSink
from edge_app.capture.sources import FrameSource, check_backend, open_source
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import SourceError, SourceKind, SourceSpec
from edge_app.config.redact import mask_secrets
from edge_app.opencv import opencv

logger = logging.getLogger(__name__)

#: ``opener(spec, capture)``, or ``opener(spec, capture, packet_sink=sink)`` for a camera that is
#: recorded: the source then tees its compressed packets to the sink (``edge_app.capture.packets``)
Opener = Callable[..., FrameSource]

DECODERS = ("ffmpeg", "gstreamer", "nvdec")
#: sources ``auto`` hands to hardware GStreamer / NVDEC; the rest stay with ffmpeg
GSTREAMER_AUTO_KINDS = (SourceKind.RTSP, SourceKind.FILE, SourceKind.CSI)
NVDEC_AUTO_KINDS = (SourceKind.RTSP, SourceKind.FILE)
NO_NVDEC_MESSAGE = "decoder nvdec needs PyNvVideoCodec (pip install 'edge-app[nvdec]') and an NVIDIA GPU"


@dataclass(frozen=True)
class DecoderInfo:
    """One decoder on this device."""

    name: str
    available: bool
    hardware: bool  # decodes on a dedicated video engine, not the CPU
    detail: str  # versions and elements when available, what to install when not


@dataclass(frozen=True)
class DecoderInventory:
    """Every decoder edge-app knows, available or not."""

    decoders: Tuple[DecoderInfo, ...]

    def get(self, name: str) -> DecoderInfo:
        for info in self.decoders:
            if info.name == name:
                return info
        return DecoderInfo(name, False, False, "unknown decoder")

    def has(self, name: str, hardware: bool = False) -> bool:
        info = self.get(name)
        return info.available and (info.hardware or not hardware)

    @property
    def available(self) -> Tuple[str, ...]:
        return tuple(info.name for info in self.decoders if info.available)


def detect_ffmpeg() -> DecoderInfo:
    try:
        cv2 = opencv()
    except ImportError as err:
        return DecoderInfo("ffmpeg", False, False, str(err))
    ffmpeg = "YES" in "".join(line for line in cv2.getBuildInformation().splitlines() if "FFMPEG:" in line)
    return DecoderInfo("ffmpeg", True, False, f"OpenCV {cv2.__version__} (FFmpeg: {'yes' if ffmpeg else 'no'}), software decode")


def detect_gstreamer() -> DecoderInfo:
    from edge_app.capture.gst.source import import_gst, probe_platform  # needs gi: imported on use

    try:
        Gst, _ = import_gst()
        platform = probe_platform()
    except SourceError as err:
        return DecoderInfo("gstreamer", False, False, str(err))
    version = Gst.version_string()
    try:
        plan = plan_pipeline(SourceSpec(SourceKind.FILE, "probe.mp4", live=False), platform)
    except SourceError as err:
        return DecoderInfo("gstreamer", False, False, f"{version}: {err}")
    if Codec.H264 not in plan.branches:
        return DecoderInfo("gstreamer", False, False, f"{version}: {plan.unsupported[Codec.H264]}")
    codecs = ", ".join(codec.value for codec in plan.branches)
    if platform.jetson:
        return DecoderInfo("gstreamer", True, True, f"{version}, hardware decode with nvv4l2decoder ({codecs})")
    missing = "".join(f"; no {codec.value}: {why}" for codec, why in plan.unsupported.items())
    return DecoderInfo("gstreamer", True, False, f"{version}, software decode ({codecs}){missing}")


def detect_nvdec() -> DecoderInfo:
    if importlib.util.find_spec("PyNvVideoCodec") is None:
        return DecoderInfo("nvdec", False, True, NO_NVDEC_MESSAGE)
    try:
        module = importlib.import_module("PyNvVideoCodec")
    except Exception as err:  # a broken install raises anything from ImportError to OSError
        return DecoderInfo("nvdec", False, True, f"PyNvVideoCodec does not import: {err}")
    from edge_app.cuda import CudaError, open_device

    try:
        device = open_device()
    except CudaError as err:
        return DecoderInfo("nvdec", False, True, f"PyNvVideoCodec is installed but there is no usable GPU: {err}")
    try:
        name = device.name
    finally:
        device.close()
    version = getattr(module, "__version__", "")
    return DecoderInfo("nvdec", True, True, f"PyNvVideoCodec {version} on {name}".replace("  ", " "))


@functools.lru_cache(maxsize=1)
def detect_decoders() -> DecoderInventory:
    """What this device has; probed once per process (installed packages do not change)."""
    return DecoderInventory((detect_ffmpeg(), detect_gstreamer(), detect_nvdec()))


def resolve_decoder(requested: str, spec: SourceSpec, inventory: DecoderInventory,
                    openers: Mapping[str, Opener]) -> str:
    """The decoder that opens ``spec`` for a camera configured with ``decoder: requested``."""
    if spec.kind is SourceKind.TEST:
        return "ffmpeg"  # drawn in Python by open_source, whatever the decoder
    if requested == "auto":
        if inventory.has("gstreamer", hardware=True) and spec.kind in GSTREAMER_AUTO_KINDS:
            return "gstreamer"
        if inventory.has("nvdec") and "nvdec" in openers and spec.kind in NVDEC_AUTO_KINDS:
            return "nvdec"
        return "ffmpeg"
    if requested == "gstreamer" and spec.kind is SourceKind.GSTREAMER:
        # A gst: source is a whole pipeline of the operator's; OpenCV's GStreamer backend runs it as is.
        return "ffmpeg"
    return requested


def open_ffmpeg(spec: SourceSpec, capture: CaptureConfig, packet_sink: Optional[PacketSink] = None) -> FrameSource:
    """OpenCV (or a synthetic source); a read waits at most ``stall_timeout_s``. A recorded
    camera's stream is read with PyAV instead, which hands out its packets (``pyav.source``)."""
    if packet_sink is not None:
        from edge_app.capture.pyav.source import open_recorded

        return open_recorded(spec, capture.open_timeout_s, capture.stall_timeout_s, packet_sink)
    return open_source(spec, open_timeout_s=capture.open_timeout_s, read_timeout_s=capture.stall_timeout_s)


def open_gstreamer(spec: SourceSpec, capture: CaptureConfig, packet_sink: Optional[PacketSink] = None,
                   max_fps: float = 0.0) -> FrameSource:
    """``max_fps``: the camera's fps_limit, whose surplus frames the pipeline drops before conversion."""
    from edge_app.capture.gst.source import GstSource, Nv12Frames, probe_platform

    platform = probe_platform()
    common: Dict[str, Any] = dict(open_timeout_s=capture.open_timeout_s, read_timeout_s=capture.stall_timeout_s,
                                  platform=platform, packet_sink=packet_sink, max_fps=max_fps)
    if platform.jetson:
        # Jetson decoders hand over NV12: the GPU letterbox kernel converts it in the same pass
        # that scales it, and only snapshots or a CPU detector pay for a BGR conversion.
        return Nv12Frames(GstSource(spec, frame_format=FrameFormat.NV12, **common))
    return GstSource(spec, **common)


def check_gstreamer(spec: SourceSpec) -> None:
    """Raise SourceError now when decoder gstreamer can never open ``spec`` here."""
    from edge_app.capture.gst.source import import_gst, probe_platform

    import_gst()
    plan_pipeline(spec, probe_platform())


def nvdec_process_opener() -> Opener:
    """NVDEC through ``child_process``: in a decoder process of the camera's own, or in the
    camera's thread where ``capture.nvdec_processes`` is false."""
    from edge_app.capture.video_decode.child_process import DecodeProcessOpener

    return DecodeProcessOpener()


def check_nvdec(spec: SourceSpec) -> None:
    """Raise SourceError now when decoder nvdec can never open ``spec`` here."""
    from edge_app.capture.video_decode.nvdec_source import check_nvdec as check_with_nvdec

    check_with_nvdec(spec)


def default_openers(max_fps: float = 0.0) -> Dict[str, Opener]:
    """Decoder name -> opener. A new decoder adds its line here (and its check to ``default_checks``).

    ``max_fps``: a camera's fps_limit, for decoders that drop the frames above it inside their
    pipeline (gstreamer's ``videorate``); the others leave it to the camera's gate (``grab``)."""
    gstreamer = functools.partial(open_gstreamer, max_fps=max_fps) if max_fps > 0 else open_gstreamer
    return {"ffmpeg": open_ffmpeg, "gstreamer": gstreamer, "nvdec": nvdec_process_opener()}


def default_checks() -> Dict[str, Callable[[SourceSpec], None]]:
    """Decoder name -> a quick check that raises SourceError for a source it can never open."""
    return {"ffmpeg": check_backend, "gstreamer": check_gstreamer, "nvdec": check_nvdec}


@dataclass
class CameraOpener:
    """The opener of one camera: resolves ``decoder`` for the source, then dispatches."""

    decoder: str = "auto"
    openers: Dict[str, Opener] = field(default_factory=default_openers)
    checks: Dict[str, Callable[[SourceSpec], None]] = field(default_factory=default_checks)
    inventory: Callable[[], DecoderInventory] = detect_decoders
    _last_logged: str = field(default="", init=False, repr=False)

    def resolve(self, spec: SourceSpec) -> str:
        inventory = self.inventory() if self.decoder == "auto" else DecoderInventory(())
        return resolve_decoder(self.decoder, spec, inventory, self.openers)

    def check(self, spec: SourceSpec) -> None:
        """Raise SourceError when the resolved decoder can never open ``spec`` (camera -> error)."""
        name = self._require(spec)
        check = self.checks.get(name)
        if check is not None:
            check(spec)

    def __call__(self, spec: SourceSpec, capture: CaptureConfig,
                 packet_sink: Optional[PacketSink] = None) -> FrameSource:
        name = self._require(spec)
        if name != self._last_logged:  # once, not on every reconnect
            self._last_logged = name
            logger.info("%s: decoder %s (configured: %s)", mask_secrets(spec.target), name, self.decoder)
        if packet_sink is None:
            return self.openers[name](spec, capture)
        return self.openers[name](spec, capture, packet_sink=packet_sink)

    def close(self) -> None:
        """The camera stops for good: openers that keep something for a reopen let it go (a
        decoder process parked at the end of a file)."""
        for opener in self.openers.values():
            close = getattr(opener, "close", None)
            if close is not None:
                close()

    def _require(self, spec: SourceSpec) -> str:
        name = self.resolve(spec)
        if name not in self.openers:
            if name == "nvdec":
                info = detect_nvdec()
                raise SourceError(info.detail if not info.available else
                                  "this edge-app version cannot decode with nvdec yet; use decoder auto or ffmpeg")
            raise SourceError(f"unknown decoder {name!r}; use one of auto, {', '.join(DECODERS)}")
        return name
