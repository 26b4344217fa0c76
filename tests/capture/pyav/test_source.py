"""AvSource (decoder ffmpeg for a recorded camera) keeps the camera's error semantics: cannot
connect -> SourceUnavailable, never readable -> SourceError, a frozen stream ends a read after the
read timeout so the camera reconnects by itself, without the watchdog."""
import subprocess
import threading
import time

import numpy as np
import pytest

from edge_app.capture import CameraWorker, StreamState
from edge_app.capture.pyav.source import AvSource, open_recorded
from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.config.source_spec import parse_source

from tests.capture.helpers import FAST, camera, timed_stop, wait_for
from tests.support.media import require_tool
from testkit.net import free_port
from tests.support.packets import CollectingSink

S = StreamState


@pytest.mark.parametrize("source", [f"rtsp://admin:hunter2@127.0.0.1:{free_port()}/none", "/nonexistent/a.mp4"])
def test_what_cannot_be_opened_now_is_unavailable_with_the_password_masked(source):
    with pytest.raises(SourceUnavailable, match="cannot open") as caught:
        AvSource(parse_source(source), open_timeout_s=2, read_timeout_s=2, packet_sink=CollectingSink())
    assert "hunter2" not in str(caught.value)


def test_a_file_without_video_is_an_error(tmp_path):
    audio = tmp_path / "a.m4a"
    subprocess.run([require_tool("ffmpeg"), "-v", "error", "-f", "lavfi", "-i", "sine=d=1", str(audio)], check=True)
    with pytest.raises(SourceError, match="no video stream"):
        AvSource(parse_source(str(audio)), packet_sink=CollectingSink())


def test_frames_are_bgr_like_opencv_gives_them(bus_clip):
    import cv2

    capture = cv2.VideoCapture(str(bus_clip))
    ok, expected = capture.read()
    capture.release()
    source = AvSource(parse_source(str(bus_clip)))
    try:
        image = source.read()
    finally:
        source.release()
    assert ok and image.shape == expected.shape and image.dtype == np.uint8
    assert np.abs(image.astype(int) - expected.astype(int)).mean() < 2  # same decoder, same colour conversion


def test_grab_moves_on_without_a_picture_and_read_still_ends_the_file(bus_clip):
    source = AvSource(parse_source(str(bus_clip)), packet_sink=CollectingSink())
    taken = 0
    try:
        while True:
            if not source.grab():
                break
            taken += 1
            if source.read() is None:
                break
            taken += 1
    finally:
        source.release()
    assert taken == 20  # bus_clip: 20 frames


def test_recorded_sources_without_packets_say_so_before_opening():
    sink = CollectingSink()
    source = open_recorded(parse_source("test://bars?width=64&height=48"), 1.0, 1.0, sink)
    try:
        assert source.read().shape == (48, 64, 3)
    finally:
        source.release()
    assert sink.of("unavailable") == ["recording unavailable: test:// sources are drawn frame by frame and have "
                                      "no compressed stream"]


@pytest.mark.parametrize("source,why", [
    ("gst:videotestsrc ! videoconvert ! appsink", "a gst: pipeline is the operator's own"),
    ("/dev/video63", "USB cameras are read as raw frames"),
    ("csi://0", "CSI cameras deliver raw frames"),
])
def test_sources_without_packets_say_why_even_when_they_cannot_open_here(source, why):
    """Said before opening: the camera's status explains the recording whatever the open does."""
    sink = CollectingSink()
    try:
        open_recorded(parse_source(source), 1.0, 1.0, sink).release()
    except (SourceError, SourceUnavailable):
        pass  # no such device / no GStreamer in this OpenCV
    assert sink.kinds() == ["unavailable"] and why in sink.of("unavailable")[0]


@pytest.mark.slow
def test_a_frozen_stream_reconnects_without_the_watchdog(rtsp_server_factory, bus_clip):
    server = rtsp_server_factory({"bus": bus_clip})
    sink = CollectingSink()
    worker = CameraWorker(camera(server.url("bus"), decoder="ffmpeg"), FAST, packet_sink=sink)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STREAMING, 20), worker.stats()
        with server.frozen():
            assert wait_for(lambda: worker.state is S.RECONNECTING, 15), worker.stats()
            assert wait_for(lambda: sink.count("closed") == 1, 5)
            time.sleep(FAST.open_timeout_s + 1)  # a reopen against the frozen server times out by itself
        assert wait_for(lambda: worker.state is S.STREAMING, 30), worker.stats()
        assert wait_for(lambda: len(sink.connections()) >= 2 and sink.connections()[-1].packets, 10)
        assert not [t.name for t in threading.enumerate() if t.name.endswith(":abandoned")]
    finally:
        assert timed_stop(worker) < 5
