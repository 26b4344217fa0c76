"""Real H.264 clips made with ffmpeg from the shared test images.

Clips are short, low-rate and without B-frames (baseline profile), with a keyframe every half
second, so an RTSP client joining mid-stream gets a picture quickly and the RTSP test server can
loop them without re-encoding. They are made once per pytest run.

Fixtures (pytest scope "session", i.e. made once per run):
    ``bus_clip``     bus.jpg for 2 s at 10 fps, 810x1080, 20 frames
    ``zidane_clip``  zidane.jpg for 2 s at 10 fps, 1280x720, 20 frames
    ``mixed_clip``   bus.jpg then zidane.jpg, 2 s each at 10 fps, 1280x720 (bus letterboxed), 40 frames
    ``bus_clip_h265`` ``bus_clip`` in H.265 (libx265), the same size, rate and keyframe interval
    ``walking_clip`` the people of bus.jpg sliding left to right across a grey 1280x720 canvas
                     (a :class:`WalkingClip`: the path and the timeline of the scene)
    ``clips_dir``    the folder the clips are written to
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from edge_app.commands import demo_clip
from testkit.skips import require_tool  # noqa: F401 - also imported from here by many tests

CLIP_FPS = 10
CLIP_SECONDS_PER_IMAGE = 2.0


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
def bus_clip_h265(clips_dir, bus_clip) -> Path:
    out = clips_dir / "bus265.mp4"
    keyint = max(1, CLIP_FPS // 2)
    # no B-frames: the RTSP test server loops only clips whose decode order is their display order
    subprocess.run([require_tool("ffmpeg"), "-hide_banner", "-loglevel", "error", "-y", "-i", str(bus_clip),
                    "-c:v", "libx265", "-x265-params", f"bframes=0:keyint={keyint}:min-keyint={keyint}:log-level=error",
                    "-pix_fmt", "yuv420p", "-tag:v", "hvc1", str(out)], check=True)
    return out


@pytest.fixture(scope="session")
def zidane_clip(clips_dir, zidane_jpg) -> Path:
    return make_clip([zidane_jpg], clips_dir / "zidane.mp4")


@pytest.fixture(scope="session")
def mixed_clip(clips_dir, bus_jpg, zidane_jpg) -> Path:
    return make_clip([bus_jpg, zidane_jpg], clips_dir / "mixed.mp4", size=image_size(zidane_jpg))


@dataclass(frozen=True)
class WalkingClip:
    """A scene in which people cross the frame from left to right, then leave.

    Timeline of one loop, in frames at ``fps``: ``lead_frames`` of empty canvas, ``walk_frames``
    in which the picture slides at constant speed from the left edge (every person in the left
    half) to the right edge (every person in the right half), ``tail_frames`` of empty canvas.
    The RTSP test server loops it, so the people come back every ``loop_s`` seconds.
    """

    path: Path
    width: int
    height: int
    fps: int
    lead_frames: int
    walk_frames: int
    tail_frames: int
    picture_width: int
    stills: Tuple[Path, ...]   # PNGs of the first, middle and last walking frame

    @property
    def loop_s(self) -> float:
        return (self.lead_frames + self.walk_frames + self.tail_frames) / self.fps

    @property
    def walk_s(self) -> float:
        return self.walk_frames / self.fps


# The people of bus.jpg, from the left edge of the leftmost to the right edge of the rightmost, so
# that at the scale below each of them is well left of the middle at the start of the walk and well
# right of it at the end. The crop leaves out the half-visible passer-by at the picture's left
# edge that the model finds with a low score: the clip holds only people a detector is sure of.
BUS_PEOPLE_CROP = (50, 300, 810, 950)   # x1, y1, x2, y2 in bus.jpg pixels


def make_walking_clip(
    picture: Path,
    out: Path,
    crop: Tuple[int, int, int, int] = BUS_PEOPLE_CROP,
    size: Tuple[int, int] = (1280, 720),
    fps: int = CLIP_FPS,
    scale: float = 0.75,
    lead_s: float = 4.0,
    walk_s: float = 7.0,
    tail_s: float = 5.0,
    grey: int = 128,
    noise_sigma: float = 0.0,
    codec: str = "h264",
) -> WalkingClip:
    """Slide ``crop`` of ``picture`` (scaled by ``scale``) from the left edge of a grey canvas to
    the right edge; frames drawn with OpenCV, encoded by ffmpeg like ``make_clip`` (baseline
    H.264, no B-frames, a keyframe every half second). The empty lead is long because an RTSP
    client needs a few seconds from connecting to its first decoded frame, and the test server
    starts the clip when the first client connects: a client then sees the whole walk.
    ``noise_sigma`` adds sensor noise (grey levels) to every frame, the same noise for the same seed.
    ``codec`` "hevc" encodes H.265 instead (libx265, the same keyframe interval, no B-frames)."""
    import cv2  # the test extra has it; the package itself must not need OpenCV here

    ffmpeg = require_tool("ffmpeg")
    source = cv2.imread(str(picture), cv2.IMREAD_COLOR)
    if source is None:
        raise RuntimeError(f"cannot read {picture}")
    x1, y1, x2, y2 = crop
    people = source[y1:y2, x1:x2]
    people = cv2.resize(people, (int(round(people.shape[1] * scale)), int(round(people.shape[0] * scale))),
                        interpolation=cv2.INTER_AREA)
    width, height = size
    pic_h, pic_w = people.shape[:2]
    if pic_w * 2 > width or pic_h > height:
        raise ValueError("the picture must fit into half the canvas width, so everyone starts left of the middle")
    top = height - pic_h - (height - pic_h) // 4
    lead, walk, tail = (int(round(seconds * fps)) for seconds in (lead_s, walk_s, tail_s))
    canvas = np.full((height, width, 3), grey, np.uint8)

    def walking_frame(i: int) -> np.ndarray:
        left = int(round((width - pic_w) * i / (walk - 1)))
        frame = canvas.copy()
        frame[top:top + pic_h, left:left + pic_w] = people
        return frame

    out.parent.mkdir(parents=True, exist_ok=True)
    keyint = max(1, fps // 2)
    if codec == "hevc":
        video = ["-c:v", "libx265", "-preset", "veryfast", "-tag:v", "hvc1",
                 "-x265-params", f"keyint={keyint}:min-keyint={keyint}:bframes=0:scenecut=0:log-level=error"]
    else:
        video = ["-c:v", "libx264", "-preset", "veryfast", "-profile:v", "baseline", "-bf", "0",
                 "-g", str(keyint), "-keyint_min", str(keyint)]
    encoder = subprocess.Popen(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
         "-s", f"{width}x{height}", "-framerate", str(fps), "-i", "-", *video,
         "-pix_fmt", "yuv420p", "-r", str(fps), "-movflags", "+faststart", "-an", str(out)],
        stdin=subprocess.PIPE,
    )
    assert encoder.stdin is not None
    frames: List[np.ndarray] = [canvas] * lead + [walking_frame(i) for i in range(walk)] + [canvas] * tail
    rng = np.random.default_rng(0)
    for frame in frames:
        encoder.stdin.write(_noisy(frame, rng, noise_sigma).tobytes())
    encoder.stdin.close()
    if encoder.wait() != 0:
        raise RuntimeError(f"ffmpeg failed to encode {out}")
    stills = []
    for name, i in (("first", 0), ("middle", walk // 2), ("last", walk - 1)):
        still = out.with_name(f"{out.stem}-{name}.png")
        cv2.imwrite(str(still), walking_frame(i))
        stills.append(still)
    return WalkingClip(out, width, height, fps, lead, walk, tail, pic_w, tuple(stills))


def _noisy(frame: np.ndarray, rng: np.random.Generator, sigma: float) -> np.ndarray:
    if sigma <= 0:
        return frame
    noise = rng.normal(0.0, sigma, frame.shape[:2]).astype(np.float32)[:, :, None]  # luma noise, like a sensor
    return np.clip(frame.astype(np.float32) + noise, 0, 255).astype(np.uint8)


def make_static_clip(out: Path, size: Tuple[int, int] = (640, 360), fps: int = CLIP_FPS, seconds: float = 8.0,
                     noise_sigma: float = 4.0, light_step_at_s: float = 4.0, light_step: int = 60) -> Path:
    """A scene where nothing moves: smooth grey shapes with sensor noise, and at ``light_step_at_s``
    the whole picture turns ``light_step`` grey levels brighter (lights switched on)."""
    import cv2

    ffmpeg = require_tool("ffmpeg")
    width, height = size
    coarse = np.random.default_rng(1).integers(40, 170, (9, 16), dtype=np.uint8)
    scene = cv2.cvtColor(cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC), cv2.COLOR_GRAY2BGR)
    lit = np.clip(scene.astype(np.int16) + light_step, 0, 255).astype(np.uint8)
    out.parent.mkdir(parents=True, exist_ok=True)
    keyint = max(1, fps // 2)
    encoder = subprocess.Popen(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
         "-s", f"{width}x{height}", "-framerate", str(fps), "-i", "-",
         "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "baseline", "-bf", "0",
         "-g", str(keyint), "-keyint_min", str(keyint), "-pix_fmt", "yuv420p", "-r", str(fps), "-an", str(out)],
        stdin=subprocess.PIPE,
    )
    assert encoder.stdin is not None
    rng = np.random.default_rng(0)
    for index in range(int(round(seconds * fps))):
        frame = lit if index >= light_step_at_s * fps else scene
        encoder.stdin.write(_noisy(frame, rng, noise_sigma).tobytes())
    encoder.stdin.close()
    if encoder.wait() != 0:
        raise RuntimeError(f"ffmpeg failed to encode {out}")
    return out


@pytest.fixture(scope="session")
def walking_clip(clips_dir, bus_jpg) -> WalkingClip:
    return make_walking_clip(bus_jpg, clips_dir / "walking.mp4")


@pytest.fixture(scope="session")
def walking_clip_h265(clips_dir, bus_jpg) -> WalkingClip:
    """The same walk encoded as H.265."""
    return make_walking_clip(bus_jpg, clips_dir / "walking-h265.mp4", codec="hevc")
