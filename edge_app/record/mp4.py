"""Fragmented MP4 by stream copy: one camera's compressed packets into a file, never re-encoded.

``frag_keyframe+empty_moov+default_base_moof``: the header is written first and every GOP is a
self-contained fragment, so a power cut or ``kill -9`` leaves a file that plays up to its last
complete fragment. Each connection's timestamps are rebased onto the file's own timeline: a
reconnect gives a gap in the file, never timestamps that go back (which would corrupt it).
"""
from __future__ import annotations

import io
import logging
import os
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO, Optional

import av

from edge_app.capture.packets import RECORDABLE_CODECS, EncodedPacket, StreamInfo

log = logging.getLogger(__name__)

#: the files' own time base (the MPEG clock): fine enough for any camera's frame rate
FILE_TIME_BASE = Fraction(1, 90000)
MOVFLAGS = "frag_keyframe+empty_moov+default_base_moof"
#: how a file remembers the wall-clock time of its first frame (read back when the index is rebuilt)
START_TAG = "edge_app start="
# NAL unit types of parameter sets, for streams that carry them only in band.
_PARAMETER_SETS = {"h264": {7, 8}, "hevc": {32, 33, 34}}
#: assumed frame interval when a camera says nothing about its rate (one frame at 30 fps)
_DEFAULT_FRAME_S = 1 / 30


class WriteError(OSError):
    """Writing failed (``errno`` tells why: ENOSPC for a full disk)."""


def nal_units(data: bytes):
    """The NAL units of an Annex B byte string, start codes removed."""
    starts = []
    i = data.find(b"\x00\x00\x01")
    while i >= 0:
        starts.append(i + 3)
        i = data.find(b"\x00\x00\x01", i + 3)
    for n, start in enumerate(starts):
        end = starts[n + 1] - 3 if n + 1 < len(starts) else len(data)
        unit = data[start:end]
        if n + 1 < len(starts) and unit.endswith(b"\x00"):
            unit = unit[:-1]  # the leading zero of a four-byte start code
        if unit:
            yield unit


def nal_type(codec: str, unit: bytes) -> int:
    return unit[0] & 0x1F if codec == "h264" else (unit[0] >> 1) & 0x3F


def in_band_parameter_sets(codec: str, keyframe: bytes) -> bytes:
    """SPS/PPS (and VPS) of an Annex B keyframe as Annex B extradata; b"" when it has none."""
    if not keyframe.startswith((b"\x00\x00\x01", b"\x00\x00\x00\x01")):
        return b""
    wanted = _PARAMETER_SETS.get(codec, set())
    units = [u for u in nal_units(keyframe) if nal_type(codec, u) in wanted]
    return b"".join(b"\x00\x00\x00\x01" + u for u in units)


def complete_length(path: Path) -> int:
    """Bytes of ``path`` up to the end of its last complete top-level box (a fragment's mdat ends
    one): what is left when a write was cut short by a full disk or a crash."""
    good = 0
    with open(path, "rb") as f:
        size_total = os.fstat(f.fileno()).st_size
        offset = 0
        while offset + 8 <= size_total:
            f.seek(offset)
            header = f.read(16)
            size = int.from_bytes(header[:4], "big")
            box = header[4:8]
            if size == 1 and len(header) == 16:
                size = int.from_bytes(header[8:16], "big")
            elif size == 0:
                size = size_total - offset
            if size < 8 or offset + size > size_total:
                break
            offset += size
            if box != b"moof":  # a fragment is complete with its mdat, not with its moof alone
                good = offset
    return good


def trim_torn_tail(path: Path) -> int:
    """Cut ``path`` after its last complete box; returns the bytes cut (0 when it was whole)."""
    try:
        keep = complete_length(path)
        cut = path.stat().st_size - keep
        if cut > 0:
            os.truncate(path, keep)
        return cut
    except OSError as err:
        log.warning("cannot trim %s: %s", path, err)
        return 0


def compatible(a: StreamInfo, b: StreamInfo) -> bool:
    """Whether packets of ``b`` may continue a file that was started with ``a``."""
    return (a.codec, a.width_px, a.height_px, a.extradata) == (b.codec, b.width_px, b.height_px, b.extradata)


def _copy_stream(out, info: StreamInfo):
    """The output stream for a copy of ``info``'s stream; no encoder or decoder is opened.

    The stream is made from one that only names the codec (an unopened encoder context) and set
    up from StreamInfo. An FFmpeg without an encoder of the codec falls back on the demuxer's own
    stream (``info.template``), which must then still be open.
    """
    holder = av.open(io.BytesIO(), "w", format="mp4")
    try:
        return out.add_stream_from_template(holder.add_stream(info.codec))
    except (av.error.FFmpegError, ValueError) as err:
        if info.template is None:
            raise ValueError(f"this FFmpeg cannot set up a {info.codec} stream copy: {err}") from err
        return out.add_stream_from_template(info.template, opaque=True)
    finally:
        holder.close()


class Fmp4Writer:
    """One fragmented MP4 file written by stream copy; not thread-safe (one recorder thread)."""

    def __init__(self, path: Path, info: StreamInfo, first: EncodedPacket, sink: Optional[BinaryIO] = None) -> None:
        """``sink``: write into this object (``write`` only, never seeked) instead of the file
        ``path``, which then only names the output in messages."""
        if info.codec not in RECORDABLE_CODECS:
            raise ValueError(f"codec {info.codec!r} cannot be recorded (only {', '.join(RECORDABLE_CODECS)})")
        self.path = Path(path)
        self.info = info
        self.start_wall = first.wall_ts
        self.last_wall = first.wall_ts
        self.packets = 0
        self.failed = False  # a write failed: the file's tail is trimmed to its last complete fragment
        self._sink = sink
        self._frame_ticks = int(round((1 / info.fps if info.fps > 0 else _DEFAULT_FRAME_S) / FILE_TIME_BASE))
        self._conn: Optional[StreamInfo] = None
        self._conn_first_dts = 0
        self._conn_offset = 0
        self._last_dts: Optional[int] = None
        self._end_ticks = 0
        self._first_pts: Optional[int] = None  # the first frame's time on the file's timeline
        extradata = info.extradata or in_band_parameter_sets(info.codec, first.data)
        try:
            if sink is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)  # a file in its place, EACCES, EDQUOT
            # flush_packets: each fragment reaches the file when it is complete, not when an I/O
            # buffer fills; otherwise a kill -9 loses the header and the fragments with it.
            self._out = av.open(str(self.path) if sink is None else sink, "w", format="mp4",
                                options={"movflags": MOVFLAGS, "flush_packets": "1"})
        except OSError as err:
            raise WriteError(err.errno, f"cannot create {self.path}: {err.strerror}") from err
        try:
            self._out.metadata["comment"] = f"{START_TAG}{first.wall_ts:.6f}"
            self._stream = _copy_stream(self._out, info)
            ctx = self._stream.codec_context
            ctx.width, ctx.height = info.width_px, info.height_px
            ctx.time_base = FILE_TIME_BASE
            if extradata:
                ctx.extradata = extradata
            self._stream.time_base = FILE_TIME_BASE
            if info.codec == "hevc":
                ctx.codec_tag = "hvc1"  # browsers and QuickTime play hvc1, not the default hev1
            self._out.start_encoding()
        except (av.error.FFmpegError, ValueError) as err:
            self._abandon()
            try:
                if sink is None:
                    self.path.unlink()  # a file without its header holds nothing
            except OSError:
                pass
            if not isinstance(err, av.error.FFmpegError):
                raise
            raise WriteError(getattr(err, "errno", 0) or 0, f"cannot start {self.path}: {err}") from err

    @property
    def duration_s(self) -> float:
        """Seconds of media written so far (the last packet's end on the file's timeline)."""
        return float((self._end_ticks - (self._first_pts or 0)) * FILE_TIME_BASE)

    @property
    def bytes(self) -> int:
        if self._sink is not None:
            return 0  # nothing of it is on disk
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def _rebase(self, info: StreamInfo, packet: EncodedPacket):
        scale = info.time_base / FILE_TIME_BASE
        if info is not self._conn:
            # A new connection (or the first one): it continues where the wall clock says, never
            # before the end of what was written.
            self._conn = info
            self._conn_first_dts = packet.dts
            if self._last_dts is None:
                self._conn_offset = 0
            else:
                # its first frame shows at the file's first frame + the wall-clock time between them
                shown = (self._first_pts or 0) + int((packet.wall_ts - self.start_wall) / FILE_TIME_BASE)
                wanted = shown - int(round((packet.pts - packet.dts) * scale))
                self._conn_offset = max(wanted, self._last_dts + self._frame_ticks)
        dts = self._conn_offset + int(round((packet.dts - self._conn_first_dts) * scale))
        pts = dts + int(round((packet.pts - packet.dts) * scale))
        if self._last_dts is not None and dts <= self._last_dts:
            bump = self._last_dts + 1 - dts  # a camera's timestamps went back: keep the file valid
            dts, pts = dts + bump, pts + bump
        return pts, dts, int(round(packet.duration * scale))

    def write(self, info: StreamInfo, packet: EncodedPacket) -> None:
        """Append one packet of connection ``info`` (compatible with the file's first)."""
        pts, dts, duration = self._rebase(info, packet)
        out = av.Packet(packet.data)
        out.stream = self._stream
        out.time_base = FILE_TIME_BASE
        out.pts, out.dts = pts, dts
        out.duration = duration or self._frame_ticks
        out.is_keyframe = packet.keyframe
        try:
            self._out.mux_one(out)
        except av.error.FFmpegError as err:
            self.failed = True
            raise WriteError(getattr(err, "errno", 0) or 0, f"writing {self.path}: {err}") from err
        self._last_dts = dts
        if self._first_pts is None:
            self._first_pts = pts
        self._end_ticks = max(self._end_ticks, pts + out.duration)
        self.last_wall = packet.wall_ts
        self.packets += 1

    def close(self) -> None:
        """Write the last fragment and the trailer; the file is complete afterwards."""
        try:
            self._out.close()
        except (av.error.FFmpegError, OSError) as err:
            self.failed = True
            raise WriteError(getattr(err, "errno", 0) or 0, f"closing {self.path}: {err}") from err
        finally:
            # what a failed write left half done would not play; FFmpeg does not always report a
            # write that a full disk refused while it closes, so every closed file is checked
            # (a stream into a sink has no file to check)
            if self._sink is None and trim_torn_tail(self.path) > 0:
                self.failed = True
                log.warning("%s: its last fragment was not written whole (a full disk?): cut back", self.path)

    def _abandon(self) -> None:
        try:
            self._out.close()
        except Exception:  # the file is unusable already; the error that got us here is raised
            pass
