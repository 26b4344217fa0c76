"""The recording store's typed reports, shared by the recorder, the appliance and the API.

Paths in these reports are relative to the recording directory; ``RecordingReader.resolve`` is
the only way from such a path to a file, and it refuses anything outside that directory.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional, Protocol

#: the largest part number of a clip anyone may ask for (a clip continues in a new part every
#: record.events.max_s): the appliance's recording routes and the fleet's clip proxy take no larger
MAX_PART = 9999


@dataclass(frozen=True)
class SegmentInfo:
    """One continuous-recording segment file."""

    camera_id: str
    start: float  # Unix seconds of its first frame
    end: float  # Unix seconds of its last frame (grows while it is written)
    bytes: int
    path: str  # relative to the recording directory


@dataclass(frozen=True)
class ClipInfo:
    """The clip of one event."""

    event_id: str
    camera_id: str
    start: float
    end: float
    bytes: int
    path: str  # relative to the recording directory
    complete: bool  # False while it is still written (post_s not over yet)
    part: int = 0  # 0: the clip from the event's start; 1, 2, ...: continuations after max_s each

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass(frozen=True)
class CameraRecordingStatus:
    """What the camera's status, metrics and the dashboard say about its recording."""

    camera_id: str
    events_enabled: bool
    continuous_enabled: bool
    recording: bool  # packets are being written now
    unavailable: Optional[str] = None  # "recording unavailable: <why>" for sources without packets
    paused: Optional[str] = None  # why writing stopped (disk below its reserve), None when writing
    bytes_written: int = 0
    packets_dropped: int = 0  # packets the recorder could not take in time (whole GOP tails)
    clips_preroll_short: int = 0  # clips that came too late for the pre-roll held in memory
    clips_skipped: int = 0  # events stored without a clip (record.events.max_concurrent or max_mb_per_hour)
    clips_cut: int = 0  # clips ended early because the hour's clip bytes were spent
    clips_limited: Optional[str] = None  # the cap that last refused or cut a clip
    # a camera with privacy masks: its re-encoder ("x264", "nvenc", "nvv4l2h264enc"); None: stream copy
    masked_encoder: Optional[str] = None
    masked_packets_dropped: int = 0  # source packets the masked re-encode could not take in time (GOP tails)


class RecordingReader(Protocol):
    """The read side the API uses."""

    def clip(self, event_id: str) -> Optional[ClipInfo]:
        ...

    def segments(self, camera_id: Optional[str], start: float, end: float) -> List[SegmentInfo]:
        ...

    def resolve(self, relative_path: str) -> Path:
        """The file for a path from a report; ValueError for anything outside the recording directory."""

    def export_stream(self, camera_id: str, start: float, end: float) -> Iterator[bytes]:
        """One MP4 of the range by stream copy, muxed as it is read; no bytes when no segment covers it."""
