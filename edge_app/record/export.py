"""One MP4 for a time range of a camera's continuous recording, by stream copy (no re-encoding).

The range starts at the last keyframe at or before ``start`` (a file must start with one) and
ends with the last packet before ``end``; segments are joined on one timeline, a gap between
them stays a gap.

The export is muxed while it is read (``export_stream``): fragmented MP4 written into memory a
fragment (one GOP) at a time and handed on, so an export holds no disk space at all and no more
memory than one GOP, however slowly it is read. ``export_range`` writes the same bytes to a file.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator, List, Optional

from edge_app.record.mp4 import Fmp4Writer, compatible

log = logging.getLogger(__name__)


class _Chunks:
    """The muxer's output: collected as it writes, taken by the reader between packets. It has no
    ``seek``, so FFmpeg treats it as a stream (a pipe) and never goes back into what was sent."""

    def __init__(self) -> None:
        self._parts: List[bytes] = []

    def write(self, data) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def _box(data: bytes, offset: int, end: int, name: bytes):
    """(start, size) of the first box ``name`` among the boxes from ``offset`` to ``end``; None without one."""
    while offset + 8 <= end:
        size = int.from_bytes(data[offset:offset + 4], "big")
        if size < 8 or offset + size > end:
            return None
        if data[offset + 4:offset + 8] == name:
            return offset, size
        offset += size
    return None


def _set_duration(data: bytearray, box_start: int, duration_s: float, timescale_of=None) -> int:
    """Write the duration field of an mvhd, mdhd (timescale then duration) or tkhd (duration only,
    in ``timescale_of``) box at ``box_start``; returns the box's own timescale (0 for a tkhd)."""
    at = box_start + 8
    version = data[at]
    width = 8 if version == 1 else 4
    dates = at + 4 + 2 * width  # after version, flags, creation and modification times
    if timescale_of is None:
        timescale, field = int.from_bytes(data[dates:dates + 4], "big"), dates + 4
    else:
        timescale, field = timescale_of, dates + 8  # after track_ID and a reserved word
    ticks = int(round(duration_s * timescale))
    if timescale and 0 < ticks < 1 << (8 * width):
        data[field:field + width] = ticks.to_bytes(width, "big")
    return timescale if timescale_of is None else 0


def with_duration(header: bytes, duration_s: float) -> bytes:
    """``header`` (ftyp and moov) with the duration of the movie and of its track set.

    A streamed fragmented MP4 states no duration (the muxer does not know it yet); a player then
    shows only what it has loaded so far. The export's length is known from the index, so it is
    written where players look for it (mvhd, tkhd, mdhd); the header keeps its size (the fields
    are there, as zero).
    """
    moov = _box(header, 0, len(header), b"moov")
    if moov is None or duration_s <= 0:
        return header
    data = bytearray(header)
    moov_end = moov[0] + moov[1]
    mvhd = _box(header, moov[0] + 8, moov_end, b"mvhd")
    if mvhd is None:
        return header
    movie_scale = _set_duration(data, mvhd[0], duration_s)
    offset = moov[0] + 8
    while True:
        trak = _box(header, offset, moov_end, b"trak")
        if trak is None:
            break
        trak_end = trak[0] + trak[1]
        tkhd = _box(header, trak[0] + 8, trak_end, b"tkhd")
        if tkhd is not None:
            _set_duration(data, tkhd[0], duration_s, movie_scale)
        mdia = _box(header, trak[0] + 8, trak_end, b"mdia")
        mdhd = mdia and _box(header, mdia[0] + 8, mdia[0] + mdia[1], b"mdhd")
        if mdhd:
            _set_duration(data, mdhd[0], duration_s)
        offset = trak_end
    return bytes(data)


def export_stream(store, camera_id: str, start: float, end: float) -> Iterator[bytes]:
    """The export's bytes, produced as they are asked for; nothing at all when no segment holds a
    frame of the range. Closing the iterator early (the client went away) stops the reading."""
    if not end > start:
        raise ValueError("the range must end after it starts")
    return _stream(store, camera_id, start, end)


def _stream(store, camera_id: str, start: float, end: float) -> Iterator[bytes]:
    rows = store.index.segments(camera_id, start, end)
    last_wall = min(end, max((row.end for row in rows), default=end))
    header_done = False
    chunks = _Chunks()
    writer: Optional[Fmp4Writer] = None
    pending = []  # the current GOP while the range has not begun: it may hold the range's start
    finished = False
    try:
        for row in rows:
            stop = False
            for info, packet in store.packets_of(row.path, camera_id):
                if packet.wall_ts >= end:
                    break
                if writer is None:
                    if packet.keyframe:
                        pending = []
                    if packet.keyframe or pending:
                        pending.append((info, packet))
                    if packet.wall_ts < start or not pending:
                        continue
                    first_info, first = pending[0]
                    writer = Fmp4Writer(Path(f"{camera_id}-export.mp4"), first_info, first, sink=chunks)
                    for held_info, held in pending:
                        writer.write(held_info, held)
                    pending = []
                elif not compatible(writer.info, info):
                    log.warning("export of %s stops at %s: the stream's format changed", camera_id, row.path)
                    stop = True
                    break
                else:
                    writer.write(info, packet)
                data = chunks.take()
                if data and not header_done and writer is not None:
                    data, header_done = with_duration(data, last_wall - writer.start_wall), True
                if data:
                    yield data
            if stop:
                break
        if writer is not None:
            finished = True
            writer.close()
            data = chunks.take()
            if data:
                yield data
    finally:
        if writer is not None and not finished:
            writer._abandon()


def export_range(store, camera_id: str, start: float, end: float, out: Path) -> Optional[Path]:
    """Write the export into the file ``out``; None (and no file) when no segment holds a frame of the range."""
    stream = export_stream(store, camera_id, start, end)
    handle = None
    try:
        for data in stream:
            if handle is None:
                handle = open(out, "wb")
            handle.write(data)
    finally:
        if handle is not None:
            handle.close()
    return None if handle is None else Path(out)
