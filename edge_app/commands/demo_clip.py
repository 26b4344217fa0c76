"""Make an H.264 clip from still images with ffmpeg: the demo's camera and the benchmark's input.

    python -m edge_app.commands.demo_clip --images ../shared/images --out demo/demo.mp4
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence, Tuple

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def image_size(path: Path) -> Tuple[int, int]:
    """(width, height) of an image, read with ffprobe so this module needs no OpenCV."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                          "-of", "csv=p=0:s=x", str(path)], check=True, capture_output=True, text=True).stdout
    width, height = out.strip().split("x")[:2]
    return int(width), int(height)


def make_clip(
    images: Sequence[Path],
    out: Path,
    seconds_per_image: float = 2.0,
    fps: int = 10,
    size: Optional[Tuple[int, int]] = None,
) -> Path:
    """Encode ``images`` one after another into an H.264 mp4 at ``out``.

    Each image is scaled to fit ``size`` (width, height; default: the first image's size, made
    even as yuv420p requires), padded black, and shown for ``seconds_per_image``. Baseline
    profile without B-frames and a keyframe every half second, so RTSP clients start decoding
    quickly and a server can loop the stream without reordering timestamps.
    """
    if not images:
        raise ValueError("no images to make a clip from")
    if shutil.which("ffmpeg") is None:
        raise RuntimeError("ffmpeg is not installed (apt-get install ffmpeg)")
    width, height = size if size is not None else image_size(images[0])
    width, height = (width // 2) * 2, (height // 2) * 2
    cmd = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y"]
    for image in images:
        cmd += ["-loop", "1", "-framerate", str(fps), "-t", f"{seconds_per_image:g}", "-i", str(image)]
    chains = [
        f"[{i}:v]scale={width}:{height}:force_original_aspect_ratio=decrease,"
        f"pad={width}:{height}:(ow-iw)/2:(oh-ih)/2,setsar=1,fps={fps},format=yuv420p[v{i}]"
        for i in range(len(images))
    ]
    joined = "".join(f"[v{i}]" for i in range(len(images)))
    graph = ";".join(chains) + f";{joined}concat=n={len(images)}:v=1:a=0[out]"
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


def unreadable_image(path: Path) -> Optional[str]:
    """Why ffmpeg cannot decode ``path``, or None when it can (a broken image would stall the clip)."""
    done = subprocess.run(["ffmpeg", "-hide_banner", "-v", "error", "-i", str(path), "-frames:v", "1", "-f", "null", "-"],
                          capture_output=True, text=True, timeout=30)
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return lines[0] if lines else f"ffmpeg exited with {done.returncode}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, required=True, help="folder of images, or one image")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds-per-image", type=float, default=2.0)
    parser.add_argument("--fps", type=int, default=10)
    parser.add_argument("--size", default="1280x720", help="WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    folder = args.images
    if not folder.exists():
        print(f"no sample images: {folder} does not exist. The sample models and images live in the folder "
              "beside the checkout (../shared); set EDGE_APP_SHARED to where yours are.", file=sys.stderr)
        return 1
    images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if folder.is_dir() else [folder]
    if not images:
        print(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {folder}; set EDGE_APP_SHARED to a folder whose images/ "
              "holds some", file=sys.stderr)
        return 1
    if shutil.which("ffmpeg") is None:
        print("ffmpeg is not installed (apt-get install ffmpeg)", file=sys.stderr)
        return 1
    for image in images:
        why = unreadable_image(image)
        if why is not None:
            print(f"ffmpeg could not make the clip: {image} is not an image it can read ({why})", file=sys.stderr)
            return 1
    width, height = (int(v) for v in args.size.lower().split("x"))
    try:
        make_clip(images, args.out, args.seconds_per_image, args.fps, (width, height))
    except (subprocess.CalledProcessError, OSError) as err:
        print(f"ffmpeg could not make the clip {args.out}: {err}", file=sys.stderr)
        return 1
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
