"""A stand-in for ``gst-launch-1.0`` running the Jetson encoder's pipeline (there is no Jetson
here): raw I420 in on fd 0, an H.264 byte stream with access unit delimiters out on fd 1, encoded
by ffmpeg's x264 behind the same pipes, tuned like a hardware encoder to hold no picture back.
``die_after_frames`` makes it end after that many
pictures, as a hardware encoder whose process dies in the middle of a recording."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

SCRIPT = """#!/usr/bin/env python3
import os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
size = args["width"] + "x" + args["height"]
rate = args["framerate"].split("/")[0]
limit = {limit!r}
os.execvp("ffmpeg", ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                     "-s", size, "-r", rate, "-i", "-", "-c:v", "libx264", "-g", args["idrinterval"], "-sc_threshold", "0",
                     "-bf", "0", "-tune", "zerolatency", "-bsf:v", "h264_metadata=aud=insert"] + (["-frames:v", str(limit)] if limit else [])
           + ["-f", "h264", "-"])
"""


def install_gst_standin(folder: Path, die_after_frames: Optional[int] = None) -> Path:
    """Write the stand-in as ``folder/gst-launch-1.0``; put ``folder`` first on PATH to use it."""
    program = Path(folder) / "gst-launch-1.0"
    program.write_text(SCRIPT.format(limit=die_after_frames))
    program.chmod(0o755)
    return program
