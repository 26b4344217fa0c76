"""The clips of the motion gating benchmark (``bench.cpu.motion_gating``): a static scene with sensor
noise, and the same scene with the people of bus.jpg walking across it, encoded with ffmpeg."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable, Optional, Tuple

import numpy as np

from testkit.paths import shared_dir

BUS_JPG = shared_dir() / "images" / "bus.jpg"


def encode(frames: Callable[[int], np.ndarray], count: int, size: Tuple[int, int], fps: int, out: Path,
           bitrate: Optional[str] = None) -> Path:
    """H.264 (x264 veryfast, a keyframe a second, no B-frames) with the ffmpeg program, or with
    PyAV's own libx264 where there is no ffmpeg program (a GPU machine without it, say).
    ``bitrate`` ("4M") caps the rate like a camera's encoder; None: x264's own quality setting."""
    if shutil.which("ffmpeg") is None:
        return _encode_pyav(frames, count, size, fps, out, bitrate)
    width, height = size
    rate = ["-b:v", bitrate, "-maxrate", bitrate, "-bufsize", bitrate] if bitrate else []
    encoder = subprocess.Popen(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
         "-s", f"{width}x{height}", "-framerate", str(fps), "-i", "-", "-c:v", "libx264", "-preset", "veryfast",
         "-bf", "0", "-g", str(fps), *rate, "-pix_fmt", "yuv420p", "-an", str(out)], stdin=subprocess.PIPE)
    assert encoder.stdin is not None
    for index in range(count):
        encoder.stdin.write(frames(index).tobytes())
    encoder.stdin.close()
    if encoder.wait() != 0:
        raise RuntimeError(f"ffmpeg failed to encode {out}")
    return out


def _encode_pyav(frames: Callable[[int], np.ndarray], count: int, size: Tuple[int, int], fps: int, out: Path,
                 bitrate: Optional[str] = None) -> Path:
    import av

    partial = out.with_name(out.name + ".part")  # a clip that exists is complete: make_clips keeps it
    options = {"preset": "veryfast", "bf": "0", "g": str(fps)}
    if bitrate:
        options.update({"b": bitrate, "maxrate": bitrate, "bufsize": bitrate})
    with av.open(str(partial), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps, options=options)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        for index in range(count):
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frames(index), format="bgr24")))
        container.mux(stream.encode(None))
    partial.replace(out)
    return out


def noisy(frame: np.ndarray, rng: np.random.Generator, sigma: float) -> np.ndarray:
    """``frame`` with Gaussian sensor noise of ``sigma`` grey levels (the same on the three channels)."""
    noise = rng.normal(0.0, sigma, frame.shape[:2]).astype(np.float32)[:, :, None]
    return np.clip(frame.astype(np.float32) + noise, 0, 255).astype(np.uint8)


def static_scene(size: Tuple[int, int]) -> np.ndarray:
    """Smooth grey shapes, like a room or a yard: what a camera shows when nobody is there."""
    import cv2

    coarse = np.random.default_rng(1).integers(40, 200, (9, 16), dtype=np.uint8)
    return cv2.cvtColor(cv2.resize(coarse, size, interpolation=cv2.INTER_CUBIC), cv2.COLOR_GRAY2BGR)


def make_clips(work_dir: Path, size: Tuple[int, int], fps: int, seconds: float = 10.0, noise: float = 4.0
               ) -> Tuple[Path, Path]:
    """(static, walking): the static scene with sensor noise; the same scene with the people of
    bus.jpg walking across it from edge to edge, the whole clip long."""
    import cv2

    count = int(round(seconds * fps))
    scene = static_scene(size)
    static = work_dir / f"static_{size[0]}x{size[1]}_{fps}fps.mp4"
    walking = work_dir / f"walking_{size[0]}x{size[1]}_{fps}fps.mp4"
    if not static.exists():
        rng = np.random.default_rng(0)
        encode(lambda i: noisy(scene, rng, noise), count, size, fps, static)
    if not walking.exists():
        people = cv2.imread(str(BUS_JPG))[300:950, 50:810]
        scale = 0.75 * size[1] / 1080
        people = cv2.resize(people, (int(people.shape[1] * scale), int(people.shape[0] * scale)),
                            interpolation=cv2.INTER_AREA)
        top = size[1] - people.shape[0] - 20
        rng = np.random.default_rng(2)

        def frame(i: int) -> np.ndarray:
            out = scene.copy()
            left = int((size[0] - people.shape[1]) * i / (count - 1))
            out[top:top + people.shape[0], left:left + people.shape[1]] = people
            return noisy(out, rng, noise)
        encode(frame, count, size, fps, walking)
    return static, walking
