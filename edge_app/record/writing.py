"""Writing one camera's files, for its event clips and its continuous segments alike.

Both parts of a camera's recorder open, write, index and close their files through one
``CameraWriting``: a write that fails for lack of space pauses the camera's writing, and so does
free space below ``record.retain.reserve_mb`` (looked at each keyframe); either makes every open
file of the camera finish (``drop_writers``). Writing resumes by itself once the space is back.
"""
from __future__ import annotations

import errno
import logging
import threading
from typing import Callable, Optional, Protocol

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.record.files import CameraFiles, ClipKey
from edge_app.record.mp4 import Fmp4Writer, WriteError
from edge_app.record.retention import MB, ReserveGuard

log = logging.getLogger(__name__)


class FileWriting(Protocol):
    """What a camera's event clips and segments ask of its writing (``CameraWriting``)."""

    def open_file(self, path: str, info: StreamInfo, packet: EncodedPacket) -> Optional[Fmp4Writer]: ...

    def started(self, writer: Fmp4Writer, key: ClipKey) -> bool: ...

    def write(self, writer: Fmp4Writer, info: StreamInfo, packet: EncodedPacket) -> bool: ...

    def close(self, writer: Fmp4Writer, key: ClipKey) -> None: ...

    def paused(self) -> bool: ...


class CameraWriting:
    """Implements ``FileWriting`` for one camera; says why it is paused or unavailable."""

    def __init__(self, files: CameraFiles, reserve_bytes: int, free_bytes: Callable[[], int],
                 drop_writers: Callable[[], None]) -> None:
        self.files = files
        self._free_bytes = free_bytes
        self._drop_writers = drop_writers  # the recorder's: both parts finish their open files
        self._reserve = ReserveGuard(reserve_bytes)
        self._lock = threading.Lock()  # the reasons are read by status() on other threads
        self._paused: Optional[str] = None
        self._unavailable: Optional[str] = None

    @property
    def paused_reason(self) -> Optional[str]:
        with self._lock:
            return self._paused

    @property
    def unavailable_reason(self) -> Optional[str]:
        with self._lock:
            return self._unavailable

    def unavailable(self, reason: Optional[str]) -> None:
        """Why the camera's stream cannot be recorded ("recording unavailable: ..."); None: it can."""
        with self._lock:
            self._unavailable = reason

    def paused(self) -> bool:
        return self.paused_reason is not None

    # ---- FileWriting ---------------------------------------------------------------------------

    def open_file(self, path: str, info: StreamInfo, packet: EncodedPacket) -> Optional[Fmp4Writer]:
        try:
            return Fmp4Writer(self.files.store.folder / path, info, packet)
        except WriteError as err:
            self._write_failed(err)
        except ValueError as err:
            self.unavailable(f"recording unavailable: {err}")
        return None

    def started(self, writer: Fmp4Writer, key: ClipKey) -> bool:
        failure = self.files.start(writer, key)
        if failure is not None:  # the file is gone: nothing could find it to delete it
            self._write_failed(failure)
        return failure is None

    def write(self, writer: Fmp4Writer, info: StreamInfo, packet: EncodedPacket) -> bool:
        try:
            writer.write(info, packet)
            return True
        except WriteError as err:
            self._write_failed(err)
            return False

    def close(self, writer: Fmp4Writer, key: ClipKey) -> None:
        failure = self.files.finish(writer, key)
        if failure is not None and failure.errno == errno.ENOSPC:
            self._pause_for_enospc(failure)

    # ---- the disk ----------------------------------------------------------------------------

    def check_disk(self) -> None:
        """At a keyframe: pause below the reserve (the open files finish), resume above it."""
        try:
            free = self._free_bytes()
        except OSError as err:
            log.warning("free space of %s unknown: %s", self.files.store.folder, err)
            return
        with self._lock:
            was = self._paused
            self._paused = self._reserve.check(free)
            now = self._paused
        if was is not None and now is None:
            log.info("recording of %s resumes: %d MB free", self.files.camera_id, free // MB)
        elif was is None and now is not None:
            log.warning("recording of %s paused: %s", self.files.camera_id, now)
            self._drop_writers()

    def _write_failed(self, err: WriteError) -> None:
        if err.errno == errno.ENOSPC:
            self._pause_for_enospc(err)
        else:
            log.error("recording %s: %s", self.files.camera_id, err)
        self._drop_writers()

    def _pause_for_enospc(self, err: WriteError) -> None:
        with self._lock:
            self._paused = self._reserve.disk_full(str(err.strerror or err))
            reason = self._paused
        log.warning("recording of %s paused: %s", self.files.camera_id, reason)


def length_s(writer: Fmp4Writer, packet: EncodedPacket) -> float:
    """How long a file is, up to ``packet``: by its video, and by the wall clock where that says more
    (a gap after a reconnect); a wall clock stepped back still lets the video decide."""
    return max(writer.duration_s, packet.wall_ts - writer.start_wall)
