"""The benchmarks' camera-like clip: a bus and four people walking through a panning view with sensor noise.

The clip of still images (``bench.common.media.ensure_clip``) flatters the appliance: the same
few detections frame after frame, nothing moving, nearly empty P-frames. A camera's picture has
objects that move (tracks, zone entries, line crossings, events and their snapshots), a view
that drifts, sensor noise in every frame, and an encoder capped at a few Mbit/s. This clip has
all of it: the whole of bus.jpg (a bus and four people) crosses a smooth background from edge to
edge while the view pans slowly left and right, every frame with Gaussian noise, H.264 at
``bitrate``, a keyframe a second, no B-frames.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Tuple

import numpy as np

from bench.cpu import motion_clips

#: the view is this much wider than the frame, so panning has somewhere to go
PAN_MARGIN = 0.25


@dataclass(frozen=True)
class SceneSettings:
    size: Tuple[int, int] = (1920, 1080)
    fps: int = 30
    seconds: float = 10.0
    noise: float = 4.0          # sensor noise, grey levels
    pan_period_s: float = 8.0   # one pan left and right; 0: a fixed view
    bitrate: str = "4M"
    people_scale: float = 0.75  # of the frame height

    def file_name(self) -> str:
        width, height = self.size
        pan = f"pan{self.pan_period_s:g}s" if self.pan_period_s else "fixed"
        return (f"camera_scene_{width}x{height}_{self.fps}fps_{self.seconds:g}s_noise{self.noise:g}_{pan}_"
                f"{self.bitrate}.mp4")


def scene_frames(settings: SceneSettings = SceneSettings()) -> Tuple[Callable[[int], np.ndarray], int]:
    """(frame i as BGR, frame count) of the scene before encoding; call in order (the noise is drawn in turn)."""
    import cv2

    width, height = settings.size
    view_w = int(round(width * (1 + PAN_MARGIN)))
    background = motion_clips.static_scene((view_w, height))
    picture = cv2.imread(str(motion_clips.BUS_JPG))
    if picture is None:
        raise FileNotFoundError(motion_clips.BUS_JPG)
    scale = settings.people_scale * height / picture.shape[0]
    picture = cv2.resize(picture, (int(picture.shape[1] * scale), int(picture.shape[0] * scale)),
                         interpolation=cv2.INTER_AREA)
    pic_h, pic_w = picture.shape[:2]
    top = height - pic_h - (height - pic_h) // 4
    count = int(round(settings.seconds * settings.fps))
    rng = np.random.default_rng(3)

    def frame(i: int) -> np.ndarray:
        view = background.copy()
        left = int(round((view_w - pic_w) * i / max(count - 1, 1)))  # walks the whole view once
        view[top:top + pic_h, left:left + pic_w] = picture
        phase = 0.5 - 0.5 * math.cos(2 * math.pi * i / (settings.pan_period_s * settings.fps)) if settings.pan_period_s else 0.5
        x = int(round((view_w - width) * phase))
        return motion_clips.noisy(np.ascontiguousarray(view[:, x:x + width]), rng, settings.noise)

    return frame, count


def ensure_camera_scene(work_dir: Path, settings: SceneSettings = SceneSettings()) -> Path:
    """The clip for ``settings`` in ``work_dir``, made unless it is already there."""
    out = Path(work_dir) / settings.file_name()
    if out.exists() and out.stat().st_size > 0:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    frame, count = scene_frames(settings)
    return motion_clips.encode(frame, count, settings.size, settings.fps, out, settings.bitrate)
