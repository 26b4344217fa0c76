"""Real H.264 and H.265 files made with ffmpeg (libx264/libx265, a keyframe every 30 frames at
30 fps), demuxed with PyAV into the packets a camera's demuxer hands to a recorder."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict

import pytest

from tests.record.media import FPS, GOP_FRAMES, SECONDS, demux
from tests.support.media import require_tool

_ENCODERS = {
    "h264": ["-c:v", "libx264", "-sc_threshold", "0", "-g", str(GOP_FRAMES), "-keyint_min", str(GOP_FRAMES)],
    "hevc": ["-c:v", "libx265", "-x265-params",
             f"log-level=error:keyint={GOP_FRAMES}:min-keyint={GOP_FRAMES}:scenecut=0:open-gop=0"],
}


@pytest.fixture(scope="session")
def encoded_files(tmp_path_factory) -> Dict[str, Path]:
    """codec -> an MP4 of SECONDS s of a moving test pattern, 320x240 at FPS, with B-frames and
    closed GOPs (as cameras send them)."""
    ffmpeg = require_tool("ffmpeg")
    require_tool("ffprobe")
    folder = tmp_path_factory.mktemp("record-media")
    files = {}
    for codec, args in _ENCODERS.items():
        out = folder / f"{codec}.mp4"
        subprocess.run([ffmpeg, "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc2=size=320x240:rate={FPS}", "-t", str(SECONDS), "-pix_fmt", "yuv420p",
                        *args, str(out)], check=True)
        files[codec] = out
    return files


@pytest.fixture(scope="session", params=["h264", "hevc"])
def codec(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def stream(encoded_files, codec):
    """(StreamInfo, [EncodedPacket]) of the codec's file; wall clock from BASE_WALL."""
    return demux(encoded_files[codec], "cam1")
