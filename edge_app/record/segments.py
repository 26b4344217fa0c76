"""A camera's continuous recording: its stream in segments of ``record.continuous.segment_s``.

A segment starts at a keyframe and ends at the first keyframe ``segment_s`` later (or where the
stream's format changes after a reconnect); it is named by the camera and its UTC start time
(``RecordingStore.segment_path``). Called on the camera's recorder thread only.
"""
from __future__ import annotations

from typing import Optional

from edge_app.capture.packets import EncodedPacket, StreamInfo
from edge_app.config.schema_record import RecordSettings
from edge_app.record.mp4 import Fmp4Writer, compatible
from edge_app.record.writing import CameraWriting, length_s


class ContinuousSegments:
    """The segment file of one camera being written, if any."""

    def __init__(self, settings: RecordSettings, writing: CameraWriting) -> None:
        self._writing = writing
        self._files = writing.files
        self._enabled = settings.continuous_enabled
        self._segment_s = settings.segment_s
        self._writer: Optional[Fmp4Writer] = None

    @property
    def writer(self) -> Optional[Fmp4Writer]:
        return self._writer

    def configure(self, settings: RecordSettings) -> None:
        self._enabled, self._segment_s = settings.continuous_enabled, settings.segment_s
        if not self._enabled:
            self.close()

    def packet(self, info: StreamInfo, packet: EncodedPacket) -> None:
        if not self._enabled or self._writing.paused():
            return
        writer = self._writer
        if writer is not None and packet.keyframe and (
                length_s(writer, packet) >= self._segment_s or not compatible(writer.info, info)):
            self.close()
            writer = None
        if writer is None:
            if not packet.keyframe:
                return
            path = self._files.store.segment_path(self._files.camera_id, packet.wall_ts)
            writer = self._writer = self._writing.open_file(path, info, packet)
            if writer is None or not self._writing.started(writer, None):
                self._writer = None
                return
        if self._writing.write(writer, info, packet) and packet.keyframe:
            self._files.index(writer, None, "progressed")

    def close(self) -> None:
        """Finish the segment being written (complete in the index)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            self._writing.close(writer, None)

    def forget(self) -> None:
        """After an error the file could not even be closed: it is left to the next start's reconciling."""
        self._writer = None
