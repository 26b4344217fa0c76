"""Make an H.264 clip from still images with ffmpeg: the demo's camera and the benchmark's input.

    python -m edge_app.demo_clip --images ../shared/images --out demo/demo.mp4
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence, Tuple

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def make_clip(
    images: Sequence[Path],
    out: Path,
    seconds_per_image: float = 2.0,
    fps: int = 10,
    size: Tuple[int, int] = (1280, 720),
    keyframe_interval: int = 10,
) -> Path:
    """Each image is scaled to fit ``size`` (width, height), padded black, and shown for
    ``seconds_per_image``. Short keyframe intervals let RTSP clients start decoding quickly."""
    if not images:
        raise ValueError("no images to make a clip from")
    if shutil.which("ffmpeg") is None:
        raise RuntimeError("ffmpeg is not installed (apt-get install ffmpeg)")
    width, height = size
    cmd = ["ffmpeg", "-y", "-loglevel", "error"]
    for image in images:
        cmd += ["-loop", "1", "-framerate", str(fps), "-t", str(seconds_per_image), "-i", str(image)]
    scaled = [
        f"[{i}:v]scale={width}:{height}:force_original_aspect_ratio=decrease,"
        f"pad={width}:{height}:(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuv420p[v{i}]"
        for i in range(len(images))
    ]
    joined = "".join(f"[v{i}]" for i in range(len(images)))
    graph = ";".join(scaled) + f";{joined}concat=n={len(images)}:v=1:a=0[out]"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd += ["-filter_complex", graph, "-map", "[out]", "-r", str(fps), "-c:v", "libx264", "-preset", "veryfast",
            "-tune", "zerolatency", "-g", str(keyframe_interval), "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(out)]
    subprocess.run(cmd, check=True)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, required=True, help="folder of images, or one image")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds-per-image", type=float, default=2.0)
    parser.add_argument("--fps", type=int, default=10)
    parser.add_argument("--size", default="1280x720", help="WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    folder = args.images
    images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if folder.is_dir() else [folder]
    if not images:
        print(f"no images in {folder}", file=sys.stderr)
        return 1
    width, height = (int(v) for v in args.size.lower().split("x"))
    make_clip(images, args.out, args.seconds_per_image, args.fps, (width, height))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
