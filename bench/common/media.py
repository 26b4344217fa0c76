"""The benchmark's input: a 1080p H.264 clip made from the sample images, and its frames decoded."""
from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import List, Tuple

import cv2
import numpy as np

from edge_app.commands.demo_clip import IMAGE_SUFFIXES, make_clip

log = logging.getLogger(__name__)


def ensure_clip(images_dir: Path, work_dir: Path, size_wh: Tuple[int, int], seconds_per_image: float, fps: int) -> Path:
    """The clip for these parameters, made with ffmpeg unless it already exists."""
    images = sorted(p for p in Path(images_dir).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        raise FileNotFoundError(f"no images in {images_dir}")
    width, height = size_wh
    out = Path(work_dir) / f"clip_{width}x{height}_{len(images)}img_{seconds_per_image:g}s_{fps}fps.mp4"
    if not out.exists() or out.stat().st_size == 0:
        log.info("making %s from %d images", out, len(images))
        make_clip(images, out, seconds_per_image=seconds_per_image, fps=fps, size=(width, height))
    return out


def ensure_camera_clip(image: Path, work_dir: Path, seconds: float = 10.0, fps: int = 30) -> Path:
    """A 1080p H.264 clip that looks like a camera's to an encoder: the image panning slowly
    across the frame with per-frame sensor noise, a keyframe a second, no B-frames, 4 Mbit/s.

    The clip of still images has nearly empty P-frames, which flatters software decoding; a
    real camera's moving picture and noise make every frame cost the decoder its full work.
    """
    out = Path(work_dir) / f"camera_1920x1080_{Path(image).stem}_{seconds:g}s_{fps}fps.mp4"
    if out.exists() and out.stat().st_size > 0:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    pan = "scale=2400:-2,crop=1920:1080:x='(iw-1920)*(0.5+0.5*sin(t/2))':y='(ih-1080)/2'"
    cmd = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-loop", "1", "-framerate", str(fps), "-t", f"{seconds:g}",
           "-i", str(image), "-vf", f"{pan},noise=alls=6:allf=t,format=yuv420p", "-c:v", "libx264", "-preset", "veryfast",
           "-bf", "0", "-g", str(fps), "-b:v", "4M", "-maxrate", "4M", "-bufsize", "4M", str(out)]
    log.info("making %s from %s", out, image)
    subprocess.run(cmd, check=True)
    return out


def repeat_clip(clip: Path, times: int) -> Path:
    """``clip`` played ``times`` times in one file (stream copy, no re-encoding), beside it.

    A file camera with ``realtime: false`` reopens its file at the end. Read at 200 frames/s, a
    10 s clip ends every 1.5 s. A decoder process starts it over in about 3 ms, but a decoder in
    a camera's thread (``capture.nvdec_processes: false``) makes a new one, which takes long
    enough to empty its camera's place in the batches; a longer file keeps that out of what is
    measured.
    """
    if times < 1:
        raise ValueError("times must be at least 1")
    clip = Path(clip)
    out = clip.with_name(f"{clip.stem}_x{times}{clip.suffix}")
    if out.exists() and out.stat().st_size > 0:
        return out
    listing = out.with_suffix(".txt")
    listing.write_text("".join(f"file '{clip.name}'\n" for _ in range(times)))
    try:
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0",
                        "-i", str(listing), "-c", "copy", str(out)], check=True)
    finally:
        listing.unlink()
    return out


def clip_frames(clip: Path, max_frames: int = 4) -> List[np.ndarray]:
    """Up to ``max_frames`` decoded BGR frames spread over the clip (each source image once)."""
    capture = cv2.VideoCapture(str(clip))
    try:
        frames: List[np.ndarray] = []
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        capture.release()
    if not frames:
        raise RuntimeError(f"{clip} has no decodable frames")
    step = max(1, len(frames) // max_frames)
    return [frames[i] for i in range(0, len(frames), step)][:max_frames]


def clip_frame_count(clip: Path) -> int:
    capture = cv2.VideoCapture(str(clip))
    try:
        return int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    finally:
        capture.release()
