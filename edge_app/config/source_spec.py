"""The grammar of ``cameras[].source`` (docs/configuration.md): what kind of source a string names.

One function, ``parse_source``, decides it for everyone: the configuration's validation, the
API's change policy (which sources read files or run pipelines) and the capture code that opens
them. It is pure: nothing is opened here.
"""
from __future__ import annotations

import enum
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

#: the test:// patterns edge_app.capture.synthetic draws
TEST_PATTERNS = ("bars", "box", "noise", "black")

# nvarguscamerasrc delivers NVMM buffers; nvvidconv copies them to system memory as BGRx and
# videoconvert drops the padding byte. appsink keeps only the newest buffer: a slow consumer
# must never make the Argus camera pipeline back up.
CSI_PIPELINE = (
    "nvarguscamerasrc sensor-id={sensor_id} ! "
    "video/x-raw(memory:NVMM),width={width},height={height},framerate={fps}/1 ! "
    "nvvidconv ! video/x-raw,format=BGRx ! videoconvert ! video/x-raw,format=BGR ! "
    "appsink drop=true max-buffers=1 sync=false"
)
CSI_DEFAULT_SIZE = (1920, 1080)
CSI_DEFAULT_FPS = 30

TEST_DEFAULTS = {"width": 640, "height": 480, "fps": 10.0}

_FFMPEG_PROTOCOL = re.compile(r"([A-Za-z0-9+.-]+):")


class SourceKind(str, enum.Enum):
    RTSP = "rtsp"
    HTTP = "http"
    FILE = "file"
    V4L2 = "v4l2"
    CSI = "csi"
    GSTREAMER = "gstreamer"
    TEST = "test"


class SourceError(ValueError):
    """The source can never work as configured; retrying is pointless."""


# Frames above 8K on a side are refused: one 16k x 16k picture is 768 MiB as BGR before any
# copy the pipeline makes, and no detector here gains anything from it.
@dataclass(frozen=True)
class SourceSpec:
    """How to open one configured source."""

    kind: SourceKind
    target: str  # what the backend opens: URL, file path, device path, pipeline, or pattern name
    live: bool  # files are the only non-live kind
    options: Dict[str, Any] = field(default_factory=dict)  # test:// size and rate

    @property
    def needs_gstreamer(self) -> bool:
        return self.kind in (SourceKind.CSI, SourceKind.GSTREAMER)


def parse_source(source: str) -> SourceSpec:
    """Classify a source string; raises SourceError for one that can never be opened."""
    source = source.strip()
    lowered = source.lower()
    if not source:
        raise SourceError("the camera source is empty")
    if lowered.startswith(("rtsp://", "rtsps://")):
        return SourceSpec(SourceKind.RTSP, source, live=True)
    if lowered.startswith(("http://", "https://")):
        return SourceSpec(SourceKind.HTTP, source, live=True)
    if lowered.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(source).path)
        if not path:
            raise SourceError(f"file source {source!r} names no file")
        return SourceSpec(SourceKind.FILE, path, live=False)
    if lowered.startswith("csi://"):
        return _parse_csi(source)
    if lowered.startswith("gst:"):
        pipeline = source[4:].strip()
        if "appsink" not in pipeline:
            raise SourceError("a gst: pipeline must end in appsink")
        return SourceSpec(SourceKind.GSTREAMER, pipeline, live=True)
    if lowered.startswith("test://"):
        return _parse_test(source)
    if re.fullmatch(r"/dev/video\d+", source):
        return SourceSpec(SourceKind.V4L2, source, live=True)
    if source.startswith("/dev/video"):
        raise SourceError(f"V4L2 devices look like /dev/video0, got {source!r}")
    if "://" in source:
        scheme = source.split("://", 1)[0]
        raise SourceError(f"unsupported source scheme {scheme!r}; use rtsp, rtsps, http, https, file, csi, gst: or test")
    return SourceSpec(SourceKind.FILE, _local_path(source), live=False)


def ffmpeg_protocol(path: str) -> Optional[str]:
    """The FFmpeg protocol a bare string opens (``concat``, ``pipe``, ``subfile``...), or None for a plain path.

    FFmpeg's own rule (``url_find_protocol``): a name of letters, digits, ``+``, ``-`` and ``.``
    followed by ``:`` is a protocol, and so is ``subfile,<options>:``.
    """
    match = _FFMPEG_PROTOCOL.match(path)
    if match:
        return match.group(1)
    if path.startswith("subfile,") and ":" in path[len("subfile,"):]:
        return "subfile"
    return None


def _local_path(source: str) -> str:
    """The file a bare source names, written so that FFmpeg, GStreamer and os agree on it.

    ``file:<path>`` is FFmpeg's file protocol: its real target is ``<path>``, which is checked like
    any path. Any other protocol prefix (``concat:``, ``subfile,``, ``data:``, ``pipe:``,
    ``crypto:``, ``async:``, ``cache:``...) would have FFmpeg read something else than the file the
    folder rules see, so it is refused. A relative path is opened as ``./<path>``: FFmpeg can then
    never take a part of it for a protocol.
    """
    path = source
    protocol = ffmpeg_protocol(path)
    if protocol is not None and protocol.lower() == "file":
        path = path[len(protocol) + 1:]
        if not path:
            raise SourceError(f"file source {source!r} names no file")
    elif protocol is not None:
        raise SourceError(f"{protocol}: is an FFmpeg protocol, not a camera source (a file whose name has a ':' "
                          f"is written ./{source}); use rtsp, rtsps, http, https, a file path, csi, gst: or test")
    return path if path.startswith("/") or path.startswith("./") else "./" + path


def _parse_csi(source: str) -> SourceSpec:
    match = re.fullmatch(r"csi://(\d+)", source.strip())
    if not match:
        raise SourceError(f"csi sources look like csi://0, got {source!r}")
    width, height = CSI_DEFAULT_SIZE
    sensor_id = int(match.group(1))
    pipeline = CSI_PIPELINE.format(sensor_id=sensor_id, width=width, height=height, fps=CSI_DEFAULT_FPS)
    # The options let decoder gstreamer build its own NV12 pipeline for the same camera.
    options = {"sensor_id": sensor_id, "width": width, "height": height, "fps": CSI_DEFAULT_FPS}
    return SourceSpec(SourceKind.CSI, pipeline, live=True, options=options)


def _parse_test(source: str) -> SourceSpec:
    parts = urllib.parse.urlsplit(source)
    pattern = (parts.netloc + parts.path).strip("/") or "bars"
    if pattern not in TEST_PATTERNS:
        raise SourceError(f"unknown test pattern {pattern!r}; use one of {', '.join(TEST_PATTERNS)}")
    options: Dict[str, Any] = dict(TEST_DEFAULTS)
    for key, values in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items():
        if key not in TEST_DEFAULTS:
            raise SourceError(f"unknown test source option {key!r}; use width, height or fps")
        try:
            value = float(values[-1])
        except ValueError:
            raise SourceError(f"test source option {key} must be a number, got {values[-1]!r}") from None
        if key in ("width", "height"):
            if not value.is_integer() or not 8 <= value <= 8192:
                raise SourceError(f"test source {key} must be a whole number from 8 to 8192")
            value = int(value)
        elif not 0 < value <= 1000:
            raise SourceError("test source fps must be above 0 and at most 1000")
        options[key] = value
    return SourceSpec(SourceKind.TEST, pattern, live=True, options=options)


def source_file(source: str) -> Optional[str]:
    """The local file a source reads, or None for network, device, test and pipeline sources."""
    try:
        spec = parse_source(source)
    except SourceError:
        return None
    return spec.target if spec.kind is SourceKind.FILE else None


def is_pipeline_source(source: str) -> bool:
    """``gst:`` and ``csi://`` sources: they run a GStreamer pipeline, not just open a stream."""
    return source.strip().lower().startswith(("gst:", "csi://"))
