"""Real fragmented MP4 recordings made by ffmpeg, put into a real recording store.

``make_fmp4`` writes what the recorder writes: H.264 in fragmented MP4
(``frag_keyframe+empty_moov+default_base_moof``), a keyframe every second, its wall-clock start
in the tag the recorder uses. ``RecordedFiles`` puts such files where the recorder puts them in a
real :class:`edge_app.record.store.RecordingStore` and has the store index them from the files
(its own reconciliation at start), for the HTTP tests of the recording routes.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional

from edge_app.events.store import EventStore
from edge_app.record.mp4 import START_TAG
from edge_app.record.store import RecordingStore
from edge_app.record.types import ClipInfo, SegmentInfo
from tests.support.media import require_tool

FRAGMENTED = "frag_keyframe+empty_moov+default_base_moof"


def make_fmp4(path: Path, seconds: float, *, start_wall: Optional[float] = None, fps: int = 10,
              size: str = "480x270", pattern: str = "testsrc2") -> Path:
    """A real H.264 fragmented MP4 of ``seconds`` from ffmpeg's test pattern (a clock that moves)."""
    ffmpeg = require_tool("ffmpeg")
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = ["-metadata", f"comment={START_TAG}{start_wall:.3f}"] if start_wall is not None else []
    subprocess.run([ffmpeg, "-v", "error", "-y", "-f", "lavfi", "-i", f"{pattern}=size={size}:rate={fps}",
                    "-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                    "-g", str(fps), "-bf", "0", *tag, "-movflags", FRAGMENTED, str(path)], check=True, timeout=60)
    return path


class RecordedFiles:
    """A real recording store in ``root``, filled with files made by ffmpeg."""

    def __init__(self, root: Path):
        self.store = RecordingStore(root)
        self.root = Path(root).resolve()

    def add_clip(self, event_id: str, camera_id: str, start: float, seconds: float, part: int = 0) -> ClipInfo:
        """Part ``part`` of the event's clip (0: the one from its start; more after record.events.max_s)."""
        relative = self.store.clip_path(camera_id, event_id, part)
        make_fmp4(self.root / relative, seconds, start_wall=start)
        self.store.reconcile()
        clip = next((c for c in self.store.clips(event_id) if c.path == relative), None)
        assert clip is not None, f"the store did not index {relative}"
        return clip

    def add_segment(self, camera_id: str, start: float, seconds: float) -> SegmentInfo:
        relative = self.store.segment_path(camera_id, start)
        make_fmp4(self.root / relative, seconds, start_wall=start)
        self.store.reconcile()
        return next(s for s in self.store.segments(camera_id, start, start + seconds) if s.path == relative)

    def link_clip(self, event_store: EventStore, event_id: str) -> None:
        """As the appliance does when the recorder reports the clip: the event store links it to its event."""
        clip = self.store.clip(event_id)
        assert clip is not None, f"no clip of {event_id} in the store"
        event_store.save_clip(event_id, clip.path, clip.bytes, clip.duration_s, clip.start, clip.end)
        assert event_store.flush()

    def clip_bytes(self, event_id: str, part: int = 0) -> bytes:
        clip = next(c for c in self.store.clips(event_id) if c.part == part)
        return self.store.resolve(clip.path).read_bytes()

    def close(self) -> None:
        self.store.close()
