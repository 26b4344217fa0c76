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


def image_size(path: Path) -> Tuple[int, int]:
    """(width, height) of an image, read by ffprobe."""
    info = _ffprobe(path, "stream=width,height")
    return int(info["width"]), int(info["height"])


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
    """Encode ``images`` one after another into an H.264 mp4 at ``out``.

    Every image is shown ``seconds_per_image`` seconds, scaled to fit ``size`` (default: the first
    image's size, made even as yuv420p requires) and padded with black to keep its aspect ratio.
    """
    if not images:
        raise ValueError("make_clip needs at least one image")
    if size is None:
        size = image_size(images[0])
    width, height = (size[0] // 2) * 2, (size[1] // 2) * 2
    cmd = [require_tool("ffmpeg"), "-hide_banner", "-loglevel", "error", "-y"]
    for image in images:
        cmd += ["-loop", "1", "-framerate", str(fps), "-t", f"{seconds_per_image:g}", "-i", str(image)]
    chains = [
        f"[{i}:v]scale={width}:{height}:force_original_aspect_ratio=decrease,"
        f"pad={width}:{height}:(ow-iw)/2:(oh-ih)/2,setsar=1,fps={fps},format=yuv420p[v{i}]"
        for i in range(len(images))
    ]
    inputs = "".join(f"[v{i}]" for i in range(len(images)))
    graph = ";".join(chains) + f";{inputs}concat=n={len(images)}:v=1:a=0[out]"
    keyint = max(1, fps // 2)
    cmd += [
        "-filter_complex", graph, "-map", "[out]",
        "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "baseline", "-bf", "0",
        "-g", str(keyint), "-keyint_min", str(keyint), "-pix_fmt", "yuv420p", "-r", str(fps),
        "-movflags", "+faststart", "-an", str(out),
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True)
    return out


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
