"""One MP4 for a time range of a camera's continuous recording, by stream copy (no re-encoding).

The range starts at the last keyframe at or before ``start`` (a file must start with one) and
ends with the last packet before ``end``; segments are joined on one timeline, a gap between
them stays a gap.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

from edge_app.record.mp4 import Fmp4Writer, compatible

log = logging.getLogger(__name__)


def export_range(store, camera_id: str, start: float, end: float, out: Path) -> Optional[Path]:
    """Write ``out``; None when no segment holds a frame of the range."""
    if not end > start:
        raise ValueError("the range must end after it starts")
    rows = store.index.segments(camera_id, start, end)
    writer: Optional[Fmp4Writer] = None
    pending = []  # the current GOP while the range has not begun: it may hold the range's start
    try:
        for row in rows:
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
                    writer = Fmp4Writer(out, first_info, first)
                    for held_info, held in pending:
                        writer.write(held_info, held)
                    pending = []
                    continue
                if not compatible(writer.info, info):
                    log.warning("export of %s stops at %s: the stream's format changed", camera_id, row.path)
                    return _finish(writer)
                writer.write(info, packet)
    except Exception:
        if writer is not None:
            writer._abandon()
        raise
    return _finish(writer) if writer is not None else None


def _finish(writer: Fmp4Writer) -> Path:
    writer.close()
    return writer.path
