import os
import subprocess
import sys
import time

import numpy as np
import pytest

from edge_app.capture.sources import (
    NO_GSTREAMER_MESSAGE, SourceUnavailable, check_backend, open_source, opencv_has_gstreamer,
)
from edge_app.config.source_spec import SourceError, SourceKind, parse_source
from edge_app.capture.synthetic import PATTERNS, SyntheticSource

BUILD_WITH_GST = "  Video I/O:\n    FFMPEG:                      YES\n    GStreamer:                   YES (1.20.3)\n"
BUILD_WITHOUT_GST = "  Video I/O:\n    FFMPEG:                      YES\n    GStreamer:                   NO\n"


@pytest.mark.parametrize(
    "source,kind,target,live",
    [
        ("rtsp://10.0.0.5:554/stream1", SourceKind.RTSP, "rtsp://10.0.0.5:554/stream1", True),
        ("rtsps://user:pw@cam.local/live", SourceKind.RTSP, "rtsps://user:pw@cam.local/live", True),
        ("http://cam.local/video.mjpg", SourceKind.HTTP, "http://cam.local/video.mjpg", True),
        ("https://cam.local/video.mjpg", SourceKind.HTTP, "https://cam.local/video.mjpg", True),
        ("/data/clips/a.mp4", SourceKind.FILE, "/data/clips/a.mp4", False),
        ("clips/a.mp4", SourceKind.FILE, "./clips/a.mp4", False),  # "./": FFmpeg never reads a protocol into it
        ("file:///data/my%20clip.mp4", SourceKind.FILE, "/data/my clip.mp4", False),
        ("/dev/video0", SourceKind.V4L2, "/dev/video0", True),
        ("/dev/video12", SourceKind.V4L2, "/dev/video12", True),
        ("gst:videotestsrc ! videoconvert ! appsink", SourceKind.GSTREAMER, "videotestsrc ! videoconvert ! appsink", True),
        ("test://bars", SourceKind.TEST, "bars", True),
        ("  test://box?width=64&height=48&fps=5 ", SourceKind.TEST, "box", True),
    ],
)
def test_parse_source(source, kind, target, live):
    spec = parse_source(source)
    assert (spec.kind, spec.target, spec.live) == (kind, target, live)


def test_csi_becomes_an_argus_pipeline_ending_in_appsink():
    spec = parse_source("csi://1")
    assert spec.kind is SourceKind.CSI and spec.live and spec.needs_gstreamer
    assert spec.target.startswith("nvarguscamerasrc sensor-id=1 ")
    assert spec.target.rstrip().split("!")[-1].strip().startswith("appsink")


def test_test_source_options():
    spec = parse_source("test://noise?width=320&height=200&fps=2.5")
    assert spec.options == {"width": 320, "height": 200, "fps": 2.5}
    assert parse_source("test://black").options == {"width": 640, "height": 480, "fps": 10.0}


@pytest.mark.parametrize(
    "source,message",
    [
        ("ftp://host/file.mp4", "unsupported source scheme 'ftp'"),
        ("", "empty"),
        ("test://plaid", "unknown test pattern 'plaid'"),
        ("test://bars?depth=3", "unknown test source option 'depth'"),
        ("test://bars?width=abc", "must be a number"),
        ("test://bars?width=10.5", "whole number"),
        ("test://bars?fps=0", "fps must be above 0"),
        ("csi://front", "csi sources look like csi://0"),
        ("gst:videotestsrc ! fakesink", "must end in appsink"),
    ],
)
def test_parse_errors_are_permanent_and_clear(source, message):
    with pytest.raises(SourceError, match=message):
        parse_source(source)


def test_gstreamer_detection_in_build_information():
    assert opencv_has_gstreamer(BUILD_WITH_GST)
    assert not opencv_has_gstreamer(BUILD_WITHOUT_GST)
    assert not opencv_has_gstreamer("no video io section at all")


@pytest.mark.parametrize("source", ["csi://0", "gst:videotestsrc ! appsink"])
def test_gstreamer_sources_without_gstreamer_fail_with_the_advice(source):
    spec = parse_source(source)
    check_backend(spec, BUILD_WITH_GST)
    with pytest.raises(SourceError) as info:
        check_backend(spec, BUILD_WITHOUT_GST)
    assert str(info.value) == NO_GSTREAMER_MESSAGE
    assert "--system-site-packages" in str(info.value) and "PyPI wheels never do" in str(info.value)


def test_this_pypi_opencv_refuses_csi_with_the_advice():
    import cv2

    if opencv_has_gstreamer(cv2.getBuildInformation()):
        pytest.skip("this OpenCV has GStreamer")
    with pytest.raises(SourceError, match="no GStreamer support"):
        open_source(parse_source("csi://0"))


def test_non_gstreamer_sources_need_no_check():
    check_backend(parse_source("rtsp://x/y"), BUILD_WITHOUT_GST)


def test_missing_file_and_device_are_not_permanent(tmp_path):
    with pytest.raises(SourceUnavailable, match="does not exist"):
        open_source(parse_source(str(tmp_path / "nope.mp4")))
    with pytest.raises(SourceUnavailable, match="not plugged in"):
        open_source(parse_source("/dev/video99"))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_test_source_makes_frames_of_the_requested_size(pattern):
    source = open_source(parse_source(f"test://{pattern}?width=96&height=64&fps=50"))
    try:
        images = [source.read() for _ in range(3)]
    finally:
        source.release()
    for image in images:
        assert image.shape == (64, 96, 3) and image.dtype == np.uint8
    if pattern == "box":
        assert not np.array_equal(images[0], images[1])  # it moves
    if pattern == "black":
        assert not images[0].any()
    if pattern == "bars":
        assert len({tuple(px) for px in images[0][0]}) == 8


def test_test_source_is_paced_and_release_ends_reads():
    source = SyntheticSource("bars", 32, 32, fps=20)
    started = time.monotonic()
    for _ in range(5):
        source.read()
    assert time.monotonic() - started >= 0.19  # 4 periods of 50 ms after the first frame
    source.release()
    assert source.read() is None


def test_file_source_reads_a_real_clip(bus_clip):
    spec = parse_source(f"file://{bus_clip}")
    source = open_source(spec)
    try:
        assert source.fps == pytest.approx(10.0)
        count = 0
        while (image := source.read()) is not None:
            assert image.shape == (1080, 810, 3)
            count += 1
    finally:
        source.release()
    assert count == 20


def test_opening_a_source_never_writes_the_process_environment(bus_clip):
    """setenv on a capture thread while another thread reads the environment (every log line's
    timestamp does, through tzset) can crash the process: the demo once died with SIGSEGV at its
    first camera open. The FFmpeg default is set when the module is imported, on the main thread;
    an open only reads it, and an operator's own value still wins."""
    script = (
        "import os, sys\n"
        "import cv2  # as edge-app run does on its main thread (it checks OpenCV first)\n"
        "from edge_app.capture.sources import FFMPEG_OPTIONS_ENV, open_source\n"
        "from edge_app.config.source_spec import parse_source\n"
        "before = dict(os.environ)\n"
        "open_source(parse_source(sys.argv[1])).release()\n"
        "assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items())\n"
        "print(os.environ[FFMPEG_OPTIONS_ENV])\n")
    for preset, expected in ((None, "rtsp_transport;tcp"), ("rtsp_transport;udp", "rtsp_transport;udp")):
        env = {k: v for k, v in os.environ.items() if k != "OPENCV_FFMPEG_CAPTURE_OPTIONS"}
        env.update({"OPENCV_FFMPEG_CAPTURE_OPTIONS": preset} if preset else {})
        done = subprocess.run([sys.executable, "-c", script, f"file://{bus_clip}"], capture_output=True, text=True,
                              env=env, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == expected
