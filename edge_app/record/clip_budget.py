"""What one camera's event clips may cost: how many are written at once and how many bytes an hour.

A setting that makes every flicker an event (``events.min_frames`` 1, a short ``end_after_s``)
with a long pre- and post-roll would otherwise have the disk write the camera's stream many
times over. An event over either cap is stored without a clip, and counted.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, List, Optional

MB = 1024 * 1024
HOUR_S = 3600.0
#: the byte window is kept in buckets of this many seconds (an hour is 60 of them)
BUCKET_S = 60.0


class ClipBudget:
    """Counts a camera's clip bytes over the last hour (by the packets' wall clock) and the events
    left without a clip; ``why_not`` says whether another clip may be written now."""

    def __init__(self, max_concurrent: int, max_mb_per_hour: float) -> None:
        self.max_concurrent = max_concurrent
        self.max_bytes_per_hour = int(max_mb_per_hour * MB)
        self._buckets: Deque[List[float]] = deque()  # [bucket start, bytes]
        self._bytes = 0
        self.skipped = 0  # events stored without a clip because of a cap
        self.cut = 0  # clips ended early because the hour's bytes were spent
        self.limited: Optional[str] = None  # the cap that last refused a clip

    def set_limits(self, max_concurrent: int, max_mb_per_hour: float) -> None:
        self.max_concurrent = max_concurrent
        self.max_bytes_per_hour = int(max_mb_per_hour * MB)

    def wrote(self, wall_ts: float, size: int) -> None:
        start = wall_ts - wall_ts % BUCKET_S
        if self._buckets and self._buckets[-1][0] >= start:
            self._buckets[-1][1] += size
        else:
            self._buckets.append([start, float(size)])
        self._bytes += size
        self._expire(wall_ts)

    def _expire(self, now_wall: float) -> None:
        while self._buckets and self._buckets[0][0] <= now_wall - HOUR_S:
            self._bytes -= int(self._buckets.popleft()[1])

    def hour_bytes(self, now_wall: float) -> int:
        self._expire(now_wall)
        return self._bytes

    def spent(self, now_wall: float) -> bool:
        return self.hour_bytes(now_wall) >= self.max_bytes_per_hour

    def why_not(self, open_clips: int, now_wall: Optional[float]) -> Optional[str]:
        """Why a new clip may not start now (None: it may)."""
        if open_clips >= self.max_concurrent:
            return f"{open_clips} clips are being written (record.events.max_concurrent {self.max_concurrent})"
        if now_wall is not None and self.spent(now_wall):
            return (f"{self.hour_bytes(now_wall) // MB} MB of clips in the last hour "
                    f"(record.events.max_mb_per_hour {self.max_bytes_per_hour // MB})")
        return None

    def refuse(self, why: str) -> None:
        self.skipped += 1
        self.limited = why
