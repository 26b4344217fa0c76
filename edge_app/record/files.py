"""The files of one camera's recorder and what the index and the on_clip listener hear of them."""
from __future__ import annotations

import errno
import logging
import sqlite3
import threading
from dataclasses import replace
from typing import Callable, Optional, Tuple

from edge_app.record.index import FileRow
from edge_app.record.mp4 import Fmp4Writer, WriteError
from edge_app.record.reading import probe_span
from edge_app.record.store import RecordingStore, row_to_clip
from edge_app.record.types import ClipInfo

log = logging.getLogger(__name__)

#: (event id, part) of a clip's file; None for a continuous segment
ClipKey = Optional[Tuple[str, int]]


class CameraFiles:
    """Opens, indexes and finishes one camera's files; counts the bytes of the finished ones."""

    def __init__(self, store: RecordingStore, camera_id: str,
                 on_clip: Optional[Callable[[ClipInfo], None]] = None) -> None:
        self.store = store
        self.camera_id = camera_id
        self._on_clip = on_clip
        self._lock = threading.Lock()
        self._bytes_done = 0

    @property
    def bytes_done(self) -> int:
        with self._lock:
            return self._bytes_done

    def relative(self, writer: Fmp4Writer) -> str:
        return writer.path.relative_to(self.store.folder).as_posix()

    def finish(self, writer: Fmp4Writer, key: ClipKey) -> Optional[WriteError]:
        """Close the file and index it complete; the error when closing failed (the file is then
        trimmed to its last complete fragment, or removed when it holds none)."""
        failure = None
        try:
            writer.close()
        except WriteError as err:
            log.warning("%s", err)
            failure = err
        with self._lock:
            self._bytes_done += writer.bytes
        end = None
        if writer.failed:
            try:
                span = probe_span(writer.path, fallback_start=writer.start_wall)
            except OSError as err:  # cannot be read back now: kept, with the end the writer knows
                log.warning("%s cannot be read back (%s): kept as written", writer.path, err)
            else:
                if span is None:
                    self.guard(lambda: self.store.delete([self.relative(writer)]))
                    self.store.forget_writing(self.relative(writer))
                    return failure
                end = span.end
        self.index(writer, key, "finished", end)
        return failure

    def start(self, writer: Fmp4Writer, key: ClipKey) -> Optional[WriteError]:
        """Index a file just opened; when the index cannot take it (a full disk fails the index
        too) the file is removed, since nothing but a restart would find it to delete it, and
        the error is returned for the recorder to pause on as on a failed write."""
        row = self._row(writer, key, "started")
        try:
            self.store.started(row)
        except sqlite3.Error as err:
            failure = WriteError(errno.ENOSPC if "full" in str(err).lower() else errno.EIO,
                                 f"the recording index cannot take {row.path}: {err}")
            self._remove(writer)
            return failure
        self._tell(key, row)
        return None

    def index(self, writer: Fmp4Writer, key: ClipKey, stage: str, end: Optional[float] = None,
              path: Optional[str] = None) -> None:
        """Tell the index (and the on_clip listener) that a file grew or finished; ``path``: another
        name of the writer's file (a clip sharing it)."""
        row = self._row(writer, key, stage, end, path)
        self.guard(lambda: getattr(self.store, stage)(row))
        self._tell(key, row)

    def start_link(self, writer: Fmp4Writer, path: str, key: ClipKey) -> None:
        """Index ``path``, a new name of the file ``writer`` writes, as a clip being written."""
        row = self._row(writer, key, "started", path=path)
        self.guard(lambda: self.store.started(row))
        self._tell(key, row)

    def finish_link(self, path: str, row: Optional[FileRow], key: ClipKey) -> None:
        """Index ``path``, another name of the finished file ``row`` describes, as complete."""
        if row is None:  # the file could not be finished (nothing of it is left)
            self.store.forget_writing(path)
            return
        assert key is not None
        named = replace(row, path=path, event_id=key[0], part=key[1], complete=True)
        self.guard(lambda: self.store.finished(named))
        self._tell(key, named)

    def _row(self, writer: Fmp4Writer, key: ClipKey, stage: str, end: Optional[float] = None,
             path: Optional[str] = None) -> FileRow:
        end = writer.start_wall + writer.duration_s if end is None else end
        event_id, part = key if key is not None else (None, 0)
        return FileRow(path or self.relative(writer), "segment" if key is None else "clip", self.camera_id, event_id,
                       part, writer.start_wall, end, writer.bytes, stage == "finished")

    def _tell(self, key: ClipKey, row: FileRow) -> None:
        if key is not None and self._on_clip is not None:
            try:
                self._on_clip(row_to_clip(row))
            except Exception:  # a listener's bug must not stop recording
                log.exception("on_clip listener failed for %s", row.path)

    def _remove(self, writer: Fmp4Writer) -> None:
        try:
            writer.close()
        except WriteError:
            pass
        self.store.forget_writing(self.relative(writer))
        try:
            writer.path.unlink()
        except OSError as err:
            log.warning("cannot remove %s: %s", writer.path, err)

    def guard(self, action: Callable[[], object]) -> None:
        try:
            action()
        except sqlite3.Error as err:  # a full disk fails the index too; the files stay the truth
            log.warning("recording index of %s not updated: %s", self.camera_id, err)
