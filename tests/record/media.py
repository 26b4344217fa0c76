"""Packets from real files, and what ffprobe says about the files a recorder wrote."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Tuple

import av

from edge_app.capture.packets import EncodedPacket, StreamInfo

FPS = 30
GOP_FRAMES = 30
GOP_S = GOP_FRAMES / FPS
FRAME_S = 1 / FPS
SECONDS = 12
#: the wall-clock time of the first frame of every demuxed file (2023-11-14T22:13:20Z)
BASE_WALL = 1_700_000_000.0


def demux(path: Path, camera_id: str, base_wall: float = BASE_WALL) -> Tuple[StreamInfo, List[EncodedPacket]]:
    """A file's video packets as a camera's demuxer hands them out, wall clock = base + pts."""
    with av.open(str(path)) as container:
        st = container.streams.video[0]
        ctx = st.codec_context
        info = StreamInfo(camera_id=camera_id, codec=ctx.name, width_px=ctx.width, height_px=ctx.height,
                          time_base=st.time_base, extradata=bytes(ctx.extradata or b""), fps=float(st.average_rate))
        first = None
        packets = []
        for p in container.demux(st):
            if p.size == 0:
                continue
            first = p.pts if first is None else first
            packets.append(EncodedPacket(bytes(p), p.pts, p.dts, p.is_keyframe,
                                         base_wall + float((p.pts - first) * st.time_base), p.duration or 0))
    return info, packets


def shifted(packets: List[EncodedPacket], pts_offset: int, wall_offset_s: float) -> List[EncodedPacket]:
    """The same packets as a later connection would hand them out (its own pts origin)."""
    return [replace(p, pts=p.pts + pts_offset, dts=p.dts + pts_offset, wall_ts=p.wall_ts + wall_offset_s)
            for p in packets]


@dataclass(frozen=True)
class Probe:
    codec: str
    tag: str
    duration_s: float
    first_s: float  # the first frame's presentation time in the file
    last_s: float  # the last frame's
    frames: int
    errors: str


def ffprobe(path: Path) -> Probe:
    """ffprobe's view of a file: stream, frames (decoded) and any error it reports."""
    run = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=codec_name,codec_tag_string:format=duration:frame=pts_time",
                          "-of", "json", str(path)], capture_output=True, text=True)
    data = json.loads(run.stdout or "{}")
    frames = [float(f["pts_time"]) for f in data.get("frames", []) if "pts_time" in f]
    stream = (data.get("streams") or [{}])[0]
    return Probe(codec=stream.get("codec_name", ""), tag=stream.get("codec_tag_string", ""),
                 duration_s=float(data.get("format", {}).get("duration", 0) or 0),
                 first_s=min(frames) if frames else -1.0, last_s=max(frames) if frames else -1.0,
                 frames=len(frames), errors=run.stderr.strip() if run.returncode == 0 else f"rc {run.returncode}: {run.stderr}")


def due_wall(packet: EncodedPacket, info: StreamInfo) -> float:
    """When a packet is due for decoding (a clip ends before the first packet due after its end)."""
    return packet.wall_ts - float((packet.pts - packet.dts) * info.time_base)
