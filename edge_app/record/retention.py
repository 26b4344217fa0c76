"""What to delete and when to stop writing: pure functions of the index, the clock and the disk.

* Age: clips older than ``events_days``, segments older than ``continuous_days``; a segment that
  holds frames of a kept clip is kept as long as the clip (the clip's event may be looked at
  again around its time).
* Size: oldest first (clips and segments together) while the recordings exceed ``max_gb`` or the
  file system is fuller than ``max_disk_percent``; a protected segment goes only after its clips.
* Reserve: below ``reserve_bytes`` free, writing pauses with the reason; it resumes by itself.
  Retention also deletes oldest first until the reserve and a margin (``RESUME_MARGIN_BYTES``, at
  most a quarter of the reserve) are free, as a recorder that keeps recording must:
  otherwise limits that allow a fuller disk than the reserve (99 % of a small card) would keep a
  pause for ever.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from edge_app.health.free_space import DiskSpace
from edge_app.record.index import FileRow

DAY_S = 86400.0
MB = 1024 * 1024
#: what retention frees beyond the reserve, so that writing resumes and does not pause again at once
RESUME_MARGIN_BYTES = 64 * MB


@dataclass(frozen=True)
class RetentionPolicy:
    events_days: float
    continuous_days: float
    max_disk_percent: float
    max_bytes: Optional[int] = None  # the recordings' own limit; None: only the disk's
    reserve_bytes: int = 512 * MB


@dataclass
class RetentionPlan:
    """Files to delete, oldest first, and why."""

    delete: List[str] = field(default_factory=list)
    by_age: int = 0
    by_size: int = 0
    freed_bytes: int = 0
    events_without_clip: List[str] = field(default_factory=list)  # event ids whose every clip part goes


def reserve_reason(free_bytes: int, reserve_bytes: int) -> Optional[str]:
    """Why writing must pause now (None: it may write)."""
    if free_bytes < reserve_bytes:
        return f"disk below reserve: {free_bytes // MB} MB free (reserve {reserve_bytes // MB} MB)"
    return None


class ReserveGuard:
    """Whether writing is paused, from the free space seen at each keyframe and full-disk errors."""

    #: after a write failed for lack of space, writing resumes with this much more than the reserve free
    ENOSPC_MARGIN_BYTES = 1 * MB

    def __init__(self, reserve_bytes: int) -> None:
        self.reserve_bytes = reserve_bytes
        self.reason: Optional[str] = None
        self._after_enospc = False

    def disk_full(self, why: str) -> str:
        self._after_enospc = True
        self.reason = f"disk full: {why}"
        return self.reason

    def check(self, free_bytes: int) -> Optional[str]:
        """The reason writing is paused now (None: it may write)."""
        needed = self.reserve_bytes + (self.ENOSPC_MARGIN_BYTES if self._after_enospc else 0)
        reason = reserve_reason(free_bytes, needed)
        if reason is None:
            self.reason, self._after_enospc = None, False
        elif self.reason is None:
            self.reason = reason
        return self.reason


def _overlaps(row: FileRow, spans: Iterable[Tuple[float, float]]) -> bool:
    return any(row.start <= end and start <= row.end for start, end in spans)


def plan_retention(rows: List[FileRow], now: float, policy: RetentionPolicy, disk: Optional[DiskSpace],
                   writing: Set[str] = frozenset()) -> RetentionPlan:
    """The files to delete under ``policy``; files in ``writing`` are never chosen."""
    plan = RetentionPlan()
    candidates = sorted((r for r in rows if r.path not in writing), key=lambda r: (r.start, r.path))
    gone: Set[str] = set()
    clip_cutoff = now - policy.events_days * DAY_S
    segment_cutoff = now - policy.continuous_days * DAY_S
    kept_clips: Dict[str, List[FileRow]] = {}
    for row in rows:
        if row.kind == "clip" and not (row.end < clip_cutoff and row.path not in writing):
            kept_clips.setdefault(row.camera_id, []).append(row)

    def spans(camera_id: str):
        return [(c.start, c.end) for c in kept_clips.get(camera_id, []) if c.path not in gone]

    def remove(row: FileRow) -> None:
        gone.add(row.path)
        plan.delete.append(row.path)
        plan.freed_bytes += row.bytes

    for row in candidates:
        if row.kind == "clip" and row.end < clip_cutoff:
            remove(row)
            plan.by_age += 1
        elif row.kind == "segment" and row.end < segment_cutoff and not _overlaps(row, spans(row.camera_id)):
            remove(row)
            plan.by_age += 1

    excess = _excess_bytes(rows, gone, policy, disk)
    deferred: List[FileRow] = []
    for row in candidates:
        if excess <= 0:
            break
        if row.path in gone:
            continue
        if row.kind == "segment" and _overlaps(row, spans(row.camera_id)):
            deferred.append(row)  # goes once the clips it holds frames of are gone
            continue
        remove(row)
        plan.by_size += 1
        excess -= row.bytes
        if row.kind == "clip":
            for held in [d for d in deferred if not _overlaps(d, spans(d.camera_id))]:
                if excess <= 0:
                    break
                deferred.remove(held)
                remove(held)
                plan.by_size += 1
                excess -= held.bytes
    plan.events_without_clip = _events_gone(rows, gone)
    return plan


def _excess_bytes(rows: List[FileRow], gone: Set[str], policy: RetentionPolicy, disk: Optional[DiskSpace]) -> int:
    remaining = sum(r.bytes for r in rows if r.path not in gone)
    freed = sum(r.bytes for r in rows if r.path in gone)
    excess = 0
    if policy.max_bytes is not None:
        excess = max(excess, remaining - policy.max_bytes)
    if disk is not None and disk.total_bytes > 0:
        allowed_used = disk.total_bytes * policy.max_disk_percent / 100.0
        excess = max(excess, int(disk.used_bytes - freed - allowed_used))
        if policy.reserve_bytes > 0:
            margin = min(RESUME_MARGIN_BYTES, policy.reserve_bytes // 4)  # a small card's reserve is small too
            excess = max(excess, policy.reserve_bytes + margin - (disk.free_bytes + freed))
    return excess


def _events_gone(rows: List[FileRow], gone: Set[str]) -> List[str]:
    parts: Dict[str, List[bool]] = {}
    for row in rows:
        if row.kind == "clip" and row.event_id:
            parts.setdefault(row.event_id, []).append(row.path in gone)
    return sorted(event for event, flags in parts.items() if all(flags))
