"""Decode a small clip through one decoder and say how it went: ``edge-app selftest``'s decoder check.

The clip is ffmpeg's test pattern encoded as baseline H.264 (what IP cameras send), made in a
temporary folder, so the check needs no camera and no sample files. The frames must come out with
the clip's size and with the pattern's colours, not grey or black: a decoder that opens but
delivers garbage fails.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from edge_app.capture.video_decode.decoders import CameraOpener
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import parse_source
from edge_app.capture.gpu_image import bgr_image

CLIP_SIZE = (640, 480)
CLIP_FPS = 10
CLIP_SECONDS = 2
#: the SMPTE-like pattern has strong colour contrast; a flat or blank frame has almost none
MIN_PATTERN_STD = 30.0


@dataclass(frozen=True)
class DecodeCheck:
    decoder: str
    ok: bool
    frames: int
    size: Optional[Tuple[int, int]]  # (width, height) of the frames decoded
    decode_fps: float  # frames decoded per second of wall time, opening included
    detail: str


def make_test_clip(out: Path, size: Tuple[int, int] = CLIP_SIZE, fps: int = CLIP_FPS,
                   seconds: int = CLIP_SECONDS) -> Path:
    """ffmpeg's ``testsrc2`` as baseline H.264 in mp4; raises RuntimeError without ffmpeg."""
    if shutil.which("ffmpeg") is None:
        raise RuntimeError("ffmpeg is not installed (apt-get install ffmpeg)")
    width, height = size
    subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
         "-i", f"testsrc2=size={width}x{height}:rate={fps}", "-t", str(seconds),
         "-c:v", "libx264", "-profile:v", "baseline", "-pix_fmt", "yuv420p", "-an", str(out)],
        check=True, capture_output=True,
    )
    return out


def check_decoder(decoder: str, clip: Path, expected_size: Tuple[int, int], frames: int = 10,
                  timeout_s: float = 10.0) -> DecodeCheck:
    """Decode the first ``frames`` frames of ``clip`` with ``decoder`` (as a camera would open it)."""
    capture = CaptureConfig(open_timeout_s=timeout_s, stall_timeout_s=timeout_s)
    started_s = time.monotonic()
    try:
        source = CameraOpener(decoder)(parse_source(str(clip)), capture)
    except Exception as err:  # any failure to open is the finding
        return DecodeCheck(decoder, False, 0, None, 0.0, f"cannot open the test clip: {err}")
    decoded, size, flat = 0, None, 0
    try:
        while decoded < frames:
            frame = source.read()
            if frame is None:
                break
            image = bgr_image(frame)  # NV12 from hardware decoders: the pattern check needs pixels
            decoded += 1
            size = (int(image.shape[1]), int(image.shape[0]))
            flat += int(float(image.std()) < MIN_PATTERN_STD)
    except Exception as err:
        return DecodeCheck(decoder, False, decoded, size, 0.0, f"reading failed after {decoded} frames: {err}")
    finally:
        source.release()
    elapsed_s = max(time.monotonic() - started_s, 1e-6)
    fps = decoded / elapsed_s
    if decoded < frames:
        return DecodeCheck(decoder, False, decoded, size, fps, f"only {decoded} of {frames} frames decoded")
    if size != expected_size:
        return DecodeCheck(decoder, False, decoded, size, fps, f"frames are {size[0]}x{size[1]}, "
                                                               f"the clip is {expected_size[0]}x{expected_size[1]}")
    if flat:
        return DecodeCheck(decoder, False, decoded, size, fps, f"{flat} of {decoded} frames are blank, not the test pattern")
    return DecodeCheck(decoder, True, decoded, size, fps,
                       f"{decoded} frames of {size[0]}x{size[1]} H.264 in {elapsed_s:.2f} s, opening included")
