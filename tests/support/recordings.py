"""Real fragmented MP4 recordings made by ffmpeg, and a recording folder that serves them.

``make_fmp4`` writes what the recorder writes: H.264 by stream copy into fragmented MP4
(``frag_keyframe+empty_moov+default_base_moof``), a keyframe every second. ``FolderRecordings``
is a ``RecordingReader`` over such files in a folder, with the store's rules for paths (nothing
outside the folder) and an export by stream copy (ffmpeg's concat demuxer, ``-c copy``), for the
HTTP tests of the routes; the recording store itself is tested in tests/record.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from edge_app.record.types import ClipInfo, SegmentInfo
from tests.support.media import require_tool

FRAGMENTED = "frag_keyframe+empty_moov+default_base_moof"


def make_fmp4(path: Path, seconds: float, *, fps: int = 10, size: str = "480x270", pattern: str = "testsrc2") -> Path:
    """A real H.264 fragmented MP4 of ``seconds`` from ffmpeg's test pattern (a clock that moves)."""
    ffmpeg = require_tool("ffmpeg")
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([ffmpeg, "-v", "error", "-y", "-f", "lavfi", "-i", f"{pattern}=size={size}:rate={fps}",
                    "-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                    "-g", str(fps), "-bf", "0", "-movflags", FRAGMENTED, str(path)], check=True, timeout=60)
    return path


class FolderRecordings:
    """A ``RecordingReader`` over files a test put in ``root``."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.clips: Dict[str, ClipInfo] = {}
        self.segment_list: List[SegmentInfo] = []
        self.exports = 0

    def add_clip(self, event_id: str, camera_id: str, start: float, relative: str, seconds: float) -> ClipInfo:
        path = self.root / relative
        if not path.exists():
            make_fmp4(path, seconds)
        info = ClipInfo(event_id, camera_id, start, start + seconds, path.stat().st_size, relative, True)
        self.clips[event_id] = info
        return info

    def add_segment(self, camera_id: str, start: float, seconds: float) -> SegmentInfo:
        relative = f"{camera_id}/{int(start)}.mp4"
        path = make_fmp4(self.root / relative, seconds)
        info = SegmentInfo(camera_id, start, start + seconds, path.stat().st_size, relative)
        self.segment_list.append(info)
        return info

    # -- RecordingReader ----------------------------------------------------------------------
    def clip(self, event_id: str) -> Optional[ClipInfo]:
        return self.clips.get(event_id)

    def segments(self, camera_id: Optional[str], start: float, end: float) -> List[SegmentInfo]:
        return sorted((s for s in self.segment_list
                       if (camera_id is None or s.camera_id == camera_id) and s.end > start and s.start < end),
                      key=lambda s: (s.start, s.camera_id))

    def resolve(self, relative_path: str) -> Path:
        path = (self.root / relative_path).resolve()
        if self.root not in path.parents:
            raise ValueError(f"{relative_path!r} is outside the recording directory")
        return path

    def export(self, camera_id: str, start: float, end: float, out: Path) -> Optional[Path]:
        chosen = self.segments(camera_id, start, end)
        if not chosen:
            return None
        self.exports += 1
        listing = out.with_suffix(".txt")
        listing.write_text("".join(f"file '{self.resolve(s.path)}'\n" for s in chosen))
        subprocess.run([require_tool("ffmpeg"), "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(listing),
                        "-c", "copy", "-movflags", "+faststart", str(out)], check=True, timeout=60)
        listing.unlink()
        return out
