"""Real H.264 clips made with ffmpeg from the shared test images.

Clips are short, low-rate and without B-frames (baseline profile), with a keyframe every half
second, so an RTSP client joining mid-stream gets a picture quickly and the RTSP test server can
loop them without re-encoding. They are made once per pytest run.

Fixtures (pytest scope "session", i.e. made once per run):
    ``bus_clip``     bus.jpg for 2 s at 10 fps, 810x1080, 20 frames
    ``zidane_clip``  zidane.jpg for 2 s at 10 fps, 1280x720, 20 frames
    ``mixed_clip``   bus.jpg then zidane.jpg, 2 s each at 10 fps, 1280x720 (bus letterboxed), 40 frames
    ``clips_dir``    the folder the clips are written to
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import pytest

from edge_app import demo_clip

CLIP_FPS = 10
CLIP_SECONDS_PER_IMAGE = 2.0


def require_tool(name: str) -> str:
    """Path of a command-line tool; skip (fail on CI) when it is not installed."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (run scripts/system-deps.sh)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


image_size = demo_clip.image_size


def clip_info(path: Path) -> Dict[str, float]:
    """width, height, fps and frames (counted by decoding) of a video file."""
    info = _ffprobe(path, "stream=width,height,r_frame_rate,nb_read_frames", count_frames=True)
    num, _, den = str(info["r_frame_rate"]).partition("/")
    return {
        "width": int(info["width"]),
        "height": int(info["height"]),
        "fps": float(num) / float(den or 1),
        "frames": int(info["nb_read_frames"]),
    }


def _ffprobe(path: Path, entries: str, count_frames: bool = False) -> Dict[str, object]:
    cmd = [require_tool("ffprobe"), "-v", "error", "-select_streams", "v:0", "-show_entries", entries, "-of", "json"]
    if count_frames:
        cmd.append("-count_frames")
    out = subprocess.run([*cmd, str(path)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["streams"][0]


def make_clip(
    images: Sequence[Path],
    out: Path,
    seconds_per_image: float = CLIP_SECONDS_PER_IMAGE,
    fps: int = CLIP_FPS,
    size: Optional[Tuple[int, int]] = None,
) -> Path:
    """The package's own clip maker (also used by the demo and the benchmark), test defaults."""
    require_tool("ffmpeg")
    return demo_clip.make_clip(images, out, seconds_per_image, fps, size)


@pytest.fixture(scope="session")
def clips_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("clips")


@pytest.fixture(scope="session")
def bus_clip(clips_dir, bus_jpg) -> Path:
    return make_clip([bus_jpg], clips_dir / "bus.mp4")


@pytest.fixture(scope="session")
def zidane_clip(clips_dir, zidane_jpg) -> Path:
    return make_clip([zidane_jpg], clips_dir / "zidane.mp4")


@pytest.fixture(scope="session")
def mixed_clip(clips_dir, bus_jpg, zidane_jpg) -> Path:
    return make_clip([bus_jpg, zidane_jpg], clips_dir / "mixed.mp4", size=image_size(zidane_jpg))
