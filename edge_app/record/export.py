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


def export_stream(store, camera_id: str, start: float, end: float) -> Iterator[bytes]:
    """The export's bytes, produced as they are asked for; nothing at all when no segment holds a
    frame of the range. Closing the iterator early (the client went away) stops the reading."""
    if not end > start:
        raise ValueError("the range must end after it starts")
    return _stream(store, camera_id, start, end)


def _stream(store, camera_id: str, start: float, end: float) -> Iterator[bytes]:
    rows = store.index.segments(camera_id, start, end)
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
