"""Reading recorded files back: their real span (for the index) and their packets (for export).

A file cut short by a crash is read up to its last complete fragment; whatever follows is
ignored, never an error.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Tuple

import av

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.record.mp4 import START_TAG

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileSpan:
    """What a recorded file really holds."""

    start: float  # Unix seconds of its first frame
    end: float  # Unix seconds of the end of its last frame
    packets: int


def _start_wall(container, fallback: float) -> float:
    comment = container.metadata.get("comment", "")
    if comment.startswith(START_TAG):
        try:
            return float(comment[len(START_TAG):])
        except ValueError:
            pass
    return fallback


def read_packets(path: Path, camera_id: str = "", fallback_start: float = 0.0, *, os_errors: bool = False
                 ) -> Iterator[Tuple[StreamInfo, EncodedPacket]]:
    """Every complete packet of ``path`` with its wall-clock time; stops quietly at a torn end.

    A file that cannot be opened yields nothing; with ``os_errors`` an error of the system (EMFILE,
    EIO, EACCES: the file may be fine) is raised instead, and only a missing file or one whose
    content is not a recording yields nothing."""
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, OSError) as err:
        if os_errors and isinstance(err, OSError) and not isinstance(err, FileNotFoundError):
            raise
        log.warning("cannot read %s: %s", path, err)
        return
    try:
        if not container.streams.video:
            return
        stream = container.streams.video[0]
        ctx = stream.codec_context
        info = StreamInfo(camera_id=camera_id, codec=ctx.name, width_px=ctx.width, height_px=ctx.height,
                          time_base=stream.time_base, extradata=bytes(ctx.extradata or b""),
                          fps=float(stream.average_rate or 0))
        start = _start_wall(container, fallback_start)
        first_pts: Optional[int] = None
        demuxed = container.demux(stream)
        while True:
            try:
                packet = next(demuxed)
            except StopIteration:
                break
            except (av.error.FFmpegError, OSError) as err:
                log.info("%s ends early (%s): read up to its last complete fragment", path, err)
                break
            if packet.size == 0 or packet.pts is None:
                continue
            if first_pts is None:
                first_pts = packet.pts
            wall = start + float((packet.pts - first_pts) * stream.time_base)
            yield info, EncodedPacket(data=bytes(packet), pts=packet.pts, dts=packet.dts if packet.dts is not None else packet.pts,
                                      keyframe=packet.is_keyframe, wall_ts=wall, duration=packet.duration or 0)
    finally:
        container.close()


def probe_span(path: Path, fallback_start: float = 0.0) -> Optional[FileSpan]:
    """The span of a recorded file by reading its packets (no decoding); None when it holds none;
    OSError when the system cannot open it now (read_packets with ``os_errors``)."""
    start = end = None
    count = 0
    for info, packet in read_packets(path, fallback_start=fallback_start, os_errors=True):
        if start is None:
            start = packet.wall_ts
        frame_s = float(packet.duration * info.time_base) if packet.duration else (1 / info.fps if info.fps else 0.0)
        end = max(end or 0.0, packet.wall_ts + frame_s)
        count += 1
    if start is None:
        return None
    return FileSpan(start=start, end=end, packets=count)
