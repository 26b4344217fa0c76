"""The recording folder: where files go, what the index says about them, and the read side.

Layout (paths in reports are relative to the folder)::

    <camera>/<YYYYmmddTHHMMSSZ>.mp4           continuous segments, named by UTC start
    <camera>/events/<event_id>.mp4            an event's clip
    <camera>/events/<event_id>__p<N>.mp4      its continuation N after max_s
    index.sqlite3                             the index (rebuilt from the files when they disagree)
"""
from __future__ import annotations

import calendar
import logging
import os
import re
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional

from edge_app.health.free_space import DiskSpace, disk_space
from edge_app.record.export import export_range, export_stream
from edge_app.record.index import INDEX_NAME, FileRow, RecordingIndex
from edge_app.record.mp4 import trim_torn_tail
from edge_app.record.reading import probe_span, read_packets
from edge_app.record.retention import RetentionPlan, RetentionPolicy, plan_retention
from edge_app.record.types import ClipInfo, SegmentInfo

log = logging.getLogger(__name__)

EVENTS_FOLDER = "events"
#: opening an index that is locked or busy (each attempt waits sqlite's 5 s), before giving up
INDEX_OPEN_ATTEMPTS = 3
INDEX_RETRY_S = 0.5
_CAMERA_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EVENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,191}$")
# part and same-second numbers have no bound of their own: up to 9 digits are read back
_SEGMENT_RE = re.compile(r"^(\d{8}T\d{6}Z)(?:-(\d{1,9}))?\.mp4$")
_CLIP_RE = re.compile(r"^(.+?)(?:__p([1-9]\d{0,8}))?\.mp4$")
_PART_SEP = "__p"


def valid_event_id(event_id: str) -> bool:
    return bool(_EVENT_RE.match(event_id)) and ".." not in event_id and _PART_SEP not in event_id


def segment_name(start_wall: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start_wall)) + ".mp4"


def _segment_start(name: str) -> Optional[float]:
    match = _SEGMENT_RE.match(name)
    if not match:
        return None
    return float(calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H%M%SZ")))


def row_to_clip(row: FileRow) -> ClipInfo:
    return ClipInfo(event_id=row.event_id or "", camera_id=row.camera_id, start=row.start, end=row.end,
                    bytes=row.bytes, path=row.path, complete=row.complete, part=row.part)


def row_to_segment(row: FileRow) -> SegmentInfo:
    return SegmentInfo(camera_id=row.camera_id, start=row.start, end=row.end, bytes=row.bytes, path=row.path)


class RecordingStore:
    """The recording folder and its index; implements ``RecordingReader``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._real = Path(os.path.realpath(self.folder))
        self.index = self._open_index()
        self._lock = threading.Lock()
        self._writing: Dict[str, bool] = {}  # paths being written now (retention leaves them)

    def _open_index(self) -> RecordingIndex:
        busy: Optional[sqlite3.OperationalError] = None
        for attempt in range(INDEX_OPEN_ATTEMPTS):
            if attempt:
                time.sleep(INDEX_RETRY_S * attempt)
            index: Optional[RecordingIndex] = None
            try:
                index = RecordingIndex(self.folder)
                index.all()
                return index
            except sqlite3.OperationalError as err:
                # Locked, busy, out of file handles, an I/O error: the index itself may be sound, and
                # setting it aside would throw its rows away for a passing cause. Asked again, then
                # raised (recording does not start, and says why; nothing is lost).
                busy = err
                log.warning("recording index %s cannot be opened now (%s); trying again", self.folder / INDEX_NAME, err)
                if index is not None:
                    index.close()
            except sqlite3.DatabaseError as err:
                if index is not None:
                    index.close()
                return self._set_aside(err)
        assert busy is not None
        raise busy

    def _set_aside(self, err: sqlite3.DatabaseError) -> RecordingIndex:
        # The files are the truth: an unreadable index is set aside and rebuilt by reconcile().
        aside = self.folder / f"{INDEX_NAME}.corrupt-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        log.warning("recording index %s unreadable (%s): moved to %s, rebuilt from the files",
                    self.folder / INDEX_NAME, err, aside.name)
        os.replace(self.folder / INDEX_NAME, aside)
        for extra in ("-wal", "-shm"):
            (self.folder / f"{INDEX_NAME}{extra}").unlink(missing_ok=True)
        return RecordingIndex(self.folder)

    def close(self) -> None:
        self.index.close()

    # ---- paths -------------------------------------------------------------------------------

    def segment_path(self, camera_id: str, start_wall: float) -> str:
        """A free relative path for a segment starting at ``start_wall``."""
        self._check_camera(camera_id)
        base = segment_name(start_wall)[:-4]
        name, number = f"{base}.mp4", 0
        while (self.folder / camera_id / name).exists():
            number += 1
            name = f"{base}-{number}.mp4"
        return f"{camera_id}/{name}"

    def clip_path(self, camera_id: str, event_id: str, part: int) -> str:
        self._check_camera(camera_id)
        if not valid_event_id(event_id):
            raise ValueError(f"event id {event_id!r} cannot name a clip file")
        suffix = f"{_PART_SEP}{part}" if part else ""
        return f"{camera_id}/{EVENTS_FOLDER}/{event_id}{suffix}.mp4"

    @staticmethod
    def _check_camera(camera_id: str) -> None:
        if not _CAMERA_RE.match(camera_id):
            raise ValueError(f"camera id {camera_id!r} cannot name a folder")

    def resolve(self, relative_path: str) -> Path:
        """The file for a path from a report; ValueError for anything outside the recording folder."""
        if not isinstance(relative_path, str) or not relative_path or "\x00" in relative_path:
            raise ValueError("no such recording")
        parts = relative_path.replace("\\", "/").split("/")
        if relative_path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError("a recording path is relative and plain (no '..', no leading '/')")
        real = Path(os.path.realpath(self.folder / relative_path))
        if self._real not in real.parents:
            raise ValueError("the path leads outside the recording folder")
        if real.name == INDEX_NAME or not real.name.endswith(".mp4"):
            raise ValueError("not a recording")
        return real

    # ---- writing side ------------------------------------------------------------------------

    def started(self, row: FileRow) -> None:
        with self._lock:
            self._writing[row.path] = True
        self.index.upsert(row)

    def progressed(self, row: FileRow) -> None:
        self.index.upsert(row)

    def finished(self, row: FileRow) -> None:
        with self._lock:
            self._writing.pop(row.path, None)
        self.index.upsert(row)

    def forget_writing(self, path: str) -> None:
        with self._lock:
            self._writing.pop(path, None)

    def is_writing(self, path: str) -> bool:
        with self._lock:
            return path in self._writing

    def delete(self, paths: List[str]) -> int:
        """Delete files (and their rows); returns the bytes freed."""
        freed = 0
        gone = []
        for path in paths:
            full = self.folder / path
            try:
                size = full.stat().st_size
                full.unlink()
                freed += size
            except FileNotFoundError:
                pass
            except OSError as err:  # its row stays: the next pass tries again
                log.warning("cannot delete %s: %s", full, err)
                continue
            gone.append(path)
        self.index.remove(gone)
        return freed

    def delete_event(self, event_id: str) -> int:
        return self.delete([row.path for row in self.index.clips(event_id)])

    # ---- read side (RecordingReader) ---------------------------------------------------------

    def clip(self, event_id: str) -> Optional[ClipInfo]:
        """The event's clip (its first part: the one that covers the event's start)."""
        rows = self.index.clips(event_id)
        return row_to_clip(rows[0]) if rows else None

    def clips(self, event_id: str) -> List[ClipInfo]:
        """Every part of the event's clip, in order (a clip longer than max_s continues in parts)."""
        return [row_to_clip(row) for row in self.index.clips(event_id)]

    def segments(self, camera_id: Optional[str], start: float, end: float) -> List[SegmentInfo]:
        return [row_to_segment(row) for row in self.index.segments(camera_id, start, end)]

    def export(self, camera_id: str, start: float, end: float, out: Path):
        return export_range(self, camera_id, start, end, Path(out))

    def export_stream(self, camera_id: str, start: float, end: float):
        """The export's bytes as they are muxed (nothing when no segment covers the range)."""
        return export_stream(self, camera_id, start, end)

    # ---- reconciling the index with the files --------------------------------------------------

    def _scan(self) -> Dict[str, FileRow]:
        """What the folder holds, as rows without spans (start/end filled in by probing)."""
        found: Dict[str, FileRow] = {}
        for camera_dir in sorted(p for p in self.folder.iterdir() if p.is_dir() and not p.is_symlink()):
            camera_id = camera_dir.name
            if not _CAMERA_RE.match(camera_id):
                continue
            for entry in camera_dir.iterdir():
                if entry.is_file() and not entry.is_symlink() and _SEGMENT_RE.match(entry.name):
                    path = f"{camera_id}/{entry.name}"
                    found[path] = FileRow(path, "segment", camera_id, None, 0, 0.0, 0.0, entry.stat().st_size, True)
            events_dir = camera_dir / EVENTS_FOLDER
            if events_dir.is_dir() and not events_dir.is_symlink():
                for entry in events_dir.iterdir():
                    match = _CLIP_RE.match(entry.name)
                    if not (entry.is_file() and not entry.is_symlink() and match and valid_event_id(match.group(1))):
                        continue
                    path = f"{camera_id}/{EVENTS_FOLDER}/{entry.name}"
                    found[path] = FileRow(path, "clip", camera_id, match.group(1), int(match.group(2) or 0),
                                          0.0, 0.0, entry.stat().st_size, True)
        return found

    def reconcile(self) -> int:
        """Make the index say what the files hold; returns how many rows changed. Call before writing."""
        on_disk = self._scan()
        indexed = {row.path: row for row in self.index.all()}
        changed = 0
        gone = [path for path in indexed if path not in on_disk]
        if gone:
            self.index.remove(gone)
            changed += len(gone)
        for path, row in on_disk.items():
            known = indexed.get(path)
            if known is not None and known.bytes == row.bytes and known.complete:
                continue
            cut = trim_torn_tail(self.folder / path)  # a crash may leave half a fragment
            if cut:
                log.info("%s: %d bytes of an unfinished fragment cut", path, cut)
                row = replace(row, bytes=row.bytes - cut)
            fallback = _segment_start(path.rsplit("/", 1)[-1]) or 0.0
            try:
                span = probe_span(self.folder / path, fallback_start=fallback)
            except OSError as err:  # EMFILE, EIO, EACCES: not a file without frames; the next start looks again
                log.warning("%s cannot be read now (%s): kept", path, err)
                continue
            if span is None:
                log.warning("%s holds no complete frame: deleted", path)
                self.delete([path])
                changed += 1
                continue
            self.index.upsert(FileRow(path, row.kind, row.camera_id, row.event_id, row.part, span.start, span.end,
                                      row.bytes, True))
            changed += 1
        if changed:
            log.info("recording index reconciled with the files: %d rows changed", changed)
        return changed

    def enforce_retention(self, policy: RetentionPolicy, now: Optional[float] = None,
                          disk: Optional[DiskSpace] = None) -> RetentionPlan:
        """Delete what ``policy`` says must go (files being written stay); returns what went."""
        if disk is None:
            disk = disk_space(self.folder)
        with self._lock:
            writing = set(self._writing)
        rows = [self._own_share(row) for row in self.index.all()]
        plan = plan_retention(rows, time.time() if now is None else now, policy, disk, writing)
        if plan.delete:
            self.delete(plan.delete)
            log.info("retention deleted %d recordings (%d by age, %d by size), %d MB",
                     len(plan.delete), plan.by_age, plan.by_size, plan.freed_bytes // (1024 * 1024))
        return plan

    def _own_share(self, row: FileRow) -> FileRow:
        """A clip sharing its file with other events' clips (hard links) counts for its share of
        the bytes, so that the recordings' total is what the disk holds."""
        if row.kind != "clip":
            return row
        try:
            links = os.stat(self.folder / row.path).st_nlink
        except OSError:
            return row
        return replace(row, bytes=row.bytes // links) if links > 1 else row

    def total_bytes(self) -> int:
        return sum(row.bytes for row in self.index.all())

    def packets_of(self, relative_path: str, camera_id: str = ""):
        """The packets of a recorded file (for export)."""
        return read_packets(self.resolve(relative_path), camera_id)
