"""GPU test fixtures: one CUDA device per installed adapter, skipped where there is no GPU.

These tests also run on a GPU machine whose Python image lacks the appliance's other
dependencies, with ``--confcutdir=tests/gpu`` so the suite-wide conftest (brokers, RTSP) is not
loaded. ``edge_app.detect``'s package ``__init__`` imports the configuration schema (pydantic)
through the factory; letterboxing needs none of it, so without pydantic the package is mapped
to its directory without running that ``__init__``.
"""
from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = ("cuda-python", "pycuda")

try:
    import pydantic  # noqa: F401
except ImportError:
    if "edge_app.detect" not in sys.modules:
        package = types.ModuleType("edge_app.detect")
        package.__path__ = [str(REPO / "edge_app" / "detect")]
        sys.modules["edge_app.detect"] = package


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU with CUDA (skipped without one)")


@pytest.fixture(scope="module", params=ADAPTERS)
def device(request):
    from edge_app.cuda import CudaError, available_adapters, open_device

    if request.param not in available_adapters():
        pytest.skip(f"{request.param} is not installed")
    try:
        dev = open_device(request.param)
    except CudaError as err:
        pytest.skip(f"no GPU through {request.param}: {err}")
    yield dev
    dev.close()


@pytest.fixture(scope="session")
def gpu_results():
    """Collects measurements; written as JSON to $EDGE_APP_GPU_RESULTS when that is set."""
    results: dict = {}
    yield results
    target = os.environ.get("EDGE_APP_GPU_RESULTS")
    if target and results:
        Path(target).write_text(json.dumps(results, indent=2, sort_keys=True))


@pytest.fixture(scope="session")
def sample_frame():
    """bus.jpg when the shared test data is there, else None (tests fall back to synthetic frames)."""
    import cv2

    shared = Path(os.environ.get("EDGE_APP_SHARED", REPO.parent / "shared"))
    image = cv2.imread(str(shared / "images" / "bus.jpg"))
    return image


@pytest.fixture(scope="session")
def h264_clips(tmp_path_factory):
    """(mp4, mpeg-ts) of one 1080p H.264 clip, 60 frames at 30 fps, no B-frames.

    Taken from $EDGE_APP_NVDEC_MEDIA (``clip1080.mp4`` and ``clip1080.ts``, for a GPU machine
    without ffmpeg), else made from bus.jpg with ffmpeg.
    """
    import shutil
    import subprocess

    media = os.environ.get("EDGE_APP_NVDEC_MEDIA")
    if media:
        return Path(media) / "clip1080.mp4", Path(media) / "clip1080.ts"
    shared = Path(os.environ.get("EDGE_APP_SHARED", REPO.parent / "shared"))
    if shutil.which("ffmpeg") is None or not (shared / "images" / "bus.jpg").exists():
        pytest.skip("no H.264 clip: set EDGE_APP_NVDEC_MEDIA or install ffmpeg")
    out = tmp_path_factory.mktemp("nvdec")
    mp4, ts = out / "clip1080.mp4", out / "clip1080.ts"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-loop", "1", "-i", str(shared / "images" / "bus.jpg"),
                    "-vf", "scale=1920:1080,zoompan=z='1+0.004*on':d=1:s=1920x1080:fps=30,format=yuv420p",
                    "-frames:v", "60", "-c:v", "libx264", "-preset", "fast", "-crf", "23", "-bf", "0", "-g", "30",
                    str(mp4)], check=True)
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", str(mp4), "-c:v", "copy",
                    "-bsf:v", "h264_mp4toannexb", "-f", "mpegts", str(ts)], check=True)
    return mp4, ts


@pytest.fixture(scope="session")
def pynvvideocodec():
    """PyNvVideoCodec, or a skip where it is not installed or finds no usable driver."""
    try:
        import PyNvVideoCodec
    except Exception as err:  # ImportError, or its own driver check
        pytest.skip(f"PyNvVideoCodec is not usable here: {str(err).splitlines()[0] if str(err) else err}")
    return PyNvVideoCodec



@pytest.fixture(scope="session")
def hevc_clip(h264_clips):
    """The same 60 frames as H.265 (``clip1080_hevc.mp4`` beside the H.264 clips, or made with ffmpeg)."""
    import shutil
    import subprocess

    clip = h264_clips[0].with_name("clip1080_hevc.mp4")
    if clip.exists():
        return clip
    if shutil.which("ffmpeg") is None:
        pytest.skip("no H.265 clip: put clip1080_hevc.mp4 in $EDGE_APP_NVDEC_MEDIA or install ffmpeg")
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", str(h264_clips[0]), "-c:v", "libx265",
                    "-x265-params", "bframes=0:keyint=30:log-level=error", "-pix_fmt", "yuv420p", str(clip)], check=True)
    return clip
