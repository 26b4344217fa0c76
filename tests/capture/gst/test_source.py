"""decoder gstreamer for real: GStreamer's software decoders (Debian's avdec_h264/avdec_h265)
behind GstSource, against the gst-rtsp-server test server and clips made with ffmpeg; and
CameraWorker with ``decoder: gstreamer`` reconnecting as it does with OpenCV."""
import subprocess
import sys
import threading
import time

import cv2
import numpy as np
import pytest

from edge_app.capture import CameraWorker, StreamState
from edge_app.capture.video_decode.decoders import CameraOpener
from edge_app.capture.gst.pipeline import Codec, FrameFormat
from edge_app.capture.gst.source import GstSource, Nv12Frames
from edge_app.capture.sources import SourceUnavailable
from edge_app.config.source_spec import parse_source
from edge_app.capture.gpu_image import HostNv12Image

from tests.capture.helpers import FAST, StateLog, camera, drain, timed_stop, wait_for
from tests.support.gst import require_gi
from tests.support.media import clip_info, require_tool
from testkit.net import free_port

S = StreamState
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _gi():
    require_gi()


class RecordingOpener(CameraOpener):
    """decoder gstreamer as the camera uses it, remembering what each open returned."""

    def __init__(self) -> None:
        super().__init__("gstreamer")
        self.opened = []

    def __call__(self, spec, capture):
        source = super().__call__(spec, capture)
        self.opened.append(source)
        return source


def encode(out, codec_args, source_args=("-f", "lavfi", "-i", "testsrc=size=320x240:rate=10", "-t", "2")):
    subprocess.run([require_tool("ffmpeg"), "-hide_banner", "-loglevel", "error", "-y", *source_args, *codec_args,
                    "-pix_fmt", "yuv420p", str(out)], check=True)
    return out


@pytest.mark.parametrize("mount,shape", [("bus", (1080, 810, 3)), ("zidane", (720, 1280, 3))])
def test_rtsp_frames_arrive_with_the_stream_size(rtsp_server, mount, shape):
    source = GstSource(parse_source(rtsp_server.url(mount)), open_timeout_s=10, read_timeout_s=5)
    try:
        images = [source.read() for _ in range(5)]
        assert source.codec is Codec.H264 and not source.plan.hardware
        assert source.fps == 0 or source.fps == pytest.approx(10)
    finally:
        source.release()
    assert all(image is not None and image.shape == shape and image.dtype == np.uint8 for image in images)


def test_rtsp_h265_stream_gets_the_h265_branch(rtsp_server_factory, bus_jpg, tmp_path):
    """The codec comes from the SDP: rtph265depay ! h265parse ! avdec_h265 here."""
    clip = encode(tmp_path / "bus265.mp4",
                  ("-vf", "scale=810:1080", "-r", "10", "-c:v", "libx265",
                   "-x265-params", "bframes=0:keyint=5:log-level=error"),  # the server loops only B-frame-free clips
                  ("-loop", "1", "-framerate", "10", "-t", "2", "-i", str(bus_jpg)))
    server = rtsp_server_factory({"bus265": clip})
    source = GstSource(parse_source(server.url("bus265")), open_timeout_s=10, read_timeout_s=5)
    try:
        images = [source.read() for _ in range(5)]
        assert source.codec is Codec.H265
        assert "rtph265depay ! h265parse ! avdec_h265" in source.plan.launch_line(source.codec)
    finally:
        source.release()
    assert all(image is not None and image.shape == (1080, 810, 3) for image in images)


def test_rtsp_frames_match_what_ffmpeg_decodes(bus_clip, rtsp_server_factory):
    """Same picture as OpenCV's FFmpeg path, up to YUV->BGR rounding (a still image: every frame equal)."""
    server = rtsp_server_factory({"bus": bus_clip})
    capture = cv2.VideoCapture(str(bus_clip))
    ok, reference = capture.read()
    capture.release()
    assert ok
    source = GstSource(parse_source(server.url("bus")), open_timeout_s=10, read_timeout_s=5)
    try:
        image = source.read()
    finally:
        source.release()
    diff = np.abs(image.astype(np.int16) - reference.astype(np.int16))
    assert diff.mean() < 1.5 and np.percentile(diff, 99.9) <= 12, (diff.mean(), diff.max())


def test_rtsp_nv12_option_hands_over_the_planes(rtsp_server_factory, zidane_clip):
    server = rtsp_server_factory({"z": zidane_clip})
    spec = parse_source(server.url("z"))
    nv12_source = GstSource(spec, open_timeout_s=10, read_timeout_s=5, frame_format=FrameFormat.NV12)
    try:
        nv12 = nv12_source.read()
    finally:
        nv12_source.release()
    assert nv12.shape == (720 * 3 // 2, 1280) and nv12.dtype == np.uint8
    bgr = cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12)
    # zidane.jpg: two men in dark suits on a bright stage; the picture is not grey or black
    assert bgr.shape == (720, 1280, 3) and 40 < bgr.mean() < 200 and bgr.std() > 30


def test_jetson_nv12_frames_reach_the_camera_as_host_nv12_images(rtsp_server_factory, zidane_clip):
    """What open_gstreamer hands a camera on a Jetson (NV12 mode, wrapped), here with the
    software decoders: frames stay NV12 until something asks for BGR, then convert once."""
    server = rtsp_server_factory({"z": zidane_clip})

    def jetson_style(spec, capture):
        return Nv12Frames(GstSource(spec, open_timeout_s=10, read_timeout_s=5, frame_format=FrameFormat.NV12))

    worker = CameraWorker(camera(server.url("z"), decoder="gstreamer"), FAST, opener=jetson_style)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STREAMING, 20), worker.stats()
        frame = worker.take()
        assert isinstance(frame.image, HostNv12Image) and frame.image.conversions == 0
        assert (frame.width, frame.height) == (1280, 720)
        bgr = frame.bgr()
        assert bgr.shape == (720, 1280, 3) and bgr.std() > 30 and frame.image.conversions == 1
        np.testing.assert_array_equal(bgr, cv2.cvtColor(frame.image.nv12, cv2.COLOR_YUV2BGR_NV12))
    finally:
        assert timed_stop(worker) < 5


def test_nv12_frames_refuses_a_bgr_source(zidane_clip):
    source = GstSource(parse_source(str(zidane_clip)), open_timeout_s=10, read_timeout_s=5)
    try:
        with pytest.raises(ValueError):
            Nv12Frames(source)
    finally:
        source.release()


def test_worker_with_decoder_gstreamer_streams_and_reconnects_after_a_server_restart(rtsp_server_factory, bus_clip):
    server = rtsp_server_factory({"bus": bus_clip})
    log = StateLog()
    opener = RecordingOpener()
    worker = CameraWorker(camera(server.url("bus"), decoder="gstreamer"), FAST, on_state=log, opener=opener)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STREAMING, 20), worker.stats()
        assert wait_for(lambda: worker.stats()["frames_captured"] >= 10, 10)
        frame = worker.take()
        assert frame is not None and (frame.width, frame.height) == (810, 1080)
        assert all(isinstance(source, GstSource) for source in opener.opened)

        server.stop()
        assert wait_for(lambda: worker.state is S.RECONNECTING, 15), worker.stats()
        assert worker.last_error
        captured = worker.stats()["frames_captured"]
        time.sleep(1.0)  # refused reconnects while the server is away
        assert worker.state is S.RECONNECTING

        server.start()
        assert wait_for(lambda: worker.state is S.STREAMING, 30), worker.stats()
        assert wait_for(lambda: worker.stats()["frames_captured"] > captured + 5, 10)
        assert worker.stats()["reconnects"] >= 1
        assert log.states() == [S.CONNECTING, S.STREAMING, S.RECONNECTING, S.STREAMING]
        assert len(opener.opened) >= 2 and all(isinstance(source, GstSource) for source in opener.opened)
    finally:
        assert timed_stop(worker) < 5
    assert worker.state is S.STOPPED


def test_worker_default_opener_honours_decoder_gstreamer(rtsp_server_factory, zidane_clip):
    """No opener passed: cameras[].decoder picks it, as in the running appliance."""
    server = rtsp_server_factory({"z": zidane_clip})
    worker = CameraWorker(camera(server.url("z"), decoder="gstreamer"), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STREAMING, 20), worker.stats()
        assert isinstance(worker._opener, CameraOpener) and worker._opener.resolve(parse_source(server.url("z"))) == "gstreamer"
        assert worker.take().image.shape == (720, 1280, 3)
    finally:
        assert timed_stop(worker) < 5


def test_a_dead_url_reconnects_with_a_masked_error_and_stops_promptly():
    url = f"rtsp://admin:hunter2@127.0.0.1:{free_port()}/nothing"
    worker = CameraWorker(camera(url, decoder="gstreamer"), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.stats()["reconnects"] >= 2, 15), worker.stats()
        stats = worker.stats()
        assert stats["state"] == "reconnecting" and stats["frames_captured"] == 0
        assert "cannot open" in stats["last_error"]
        assert "hunter2" not in stats["last_error"] and "admin:***@" in stats["last_error"]
    finally:
        assert timed_stop(worker) < 5


def test_opening_a_dead_url_raises_source_unavailable_quickly():
    started_s = time.monotonic()
    with pytest.raises(SourceUnavailable, match="cannot open"):
        GstSource(parse_source(f"rtsp://127.0.0.1:{free_port()}/x"), open_timeout_s=5, read_timeout_s=5)
    assert time.monotonic() - started_s < 5


@pytest.mark.parametrize("name,codec_args,codec", [
    ("h264.mp4", ("-c:v", "libx264", "-bf", "2"), Codec.H264),  # B-frames: decode order != display order
    ("h265.mkv", ("-c:v", "libx265", "-x265-params", "log-level=error"), Codec.H265),
    ("mjpeg.avi", ("-c:v", "mjpeg", "-q:v", "5"), Codec.JPEG),
])
def test_file_sources_deliver_every_frame_then_end(tmp_path, name, codec_args, codec):
    clip = encode(tmp_path / name, codec_args)
    source = GstSource(parse_source(str(clip)), open_timeout_s=10, read_timeout_s=5)
    images = []
    try:
        while (image := source.read()) is not None:
            images.append(image)
        assert source.codec is codec and source.fps == pytest.approx(10)
    finally:
        source.release()
    assert len(images) == clip_info(clip)["frames"] == 20
    assert all(image.shape == (240, 320, 3) for image in images)


def test_file_with_an_audio_track(tmp_path):
    clip = encode(tmp_path / "av.mp4", ("-c:v", "libx264", "-c:a", "aac", "-shortest"),
                  ("-f", "lavfi", "-i", "testsrc=size=320x240:rate=10", "-f", "lavfi", "-i", "sine", "-t", "2"))
    source = GstSource(parse_source(str(clip)), open_timeout_s=10, read_timeout_s=5)
    try:
        count = 0
        while source.read() is not None:
            count += 1
    finally:
        source.release()
    assert count == 20


def test_worker_plays_a_file_with_decoder_gstreamer_without_dropping(tmp_path):
    clip = encode(tmp_path / "a.mp4", ("-c:v", "libx264",))
    worker = CameraWorker(camera(str(clip), decoder="gstreamer", realtime=False), FAST)
    worker.start()
    try:
        frames = drain(worker, lambda: worker.state is S.STOPPED, 20)
    finally:
        worker.stop()
    assert [f.frame_id for f in frames] == list(range(1, 21))
    assert worker.state is S.STOPPED and worker.last_error is None


@pytest.mark.parametrize("source_kind", ["codec", "http"])
def test_what_decoder_gstreamer_cannot_read_puts_the_camera_in_error(tmp_path, source_kind):
    if source_kind == "codec":  # MPEG-4 part 2: no branch for it
        source, message = str(encode(tmp_path / "mpeg4.avi", ("-c:v", "mpeg4"))), "use decoder ffmpeg"
    else:
        source, message = f"http://127.0.0.1:{free_port()}/video.mjpg", "use decoder ffmpeg for them"
    worker = CameraWorker(camera(source, decoder="gstreamer"), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.ERROR, 15), worker.stats()
        assert message in worker.last_error
    finally:
        worker.stop()


@pytest.mark.parametrize("source", ["{tmp}/later.mp4", "/dev/video97"])
def test_a_missing_file_or_device_is_unavailable_not_an_error(tmp_path, source):
    with pytest.raises(SourceUnavailable, match="does not exist"):
        GstSource(parse_source(source.format(tmp=tmp_path)))


def test_without_pygobject_decoder_gstreamer_names_what_to_install():
    """A Python without gi (simulated by blocking the import) gets the error a user would."""
    code = ("import sys; sys.modules['gi'] = None\n"
            "from edge_app.capture.video_decode.decoders import CameraOpener\n"
            "from edge_app.config.source_spec import SourceError, parse_source\n"
            "try:\n    CameraOpener('gstreamer').check(parse_source('rtsp://cam/x'))\n"
            "except SourceError as err:\n    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "PyGObject" in out and "edge-app[gstreamer]" in out and "--system-site-packages" in out


def test_a_stalled_stream_reconnects_without_the_watchdog_abandoning_a_thread(rtsp_server_factory, bus_clip):
    """The server freezes (SIGSTOP: the connection stays open, nothing arrives): reads end after
    stall_timeout_s on their own, the camera reconnects, and streams again once the server thaws."""
    server = rtsp_server_factory({"bus": bus_clip})
    worker = CameraWorker(camera(server.url("bus"), decoder="gstreamer"), FAST)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STREAMING, 20), worker.stats()
        with server.frozen():
            assert wait_for(lambda: worker.state is S.RECONNECTING, 10), worker.stats()
            assert "sent nothing for 2 s" in worker.last_error
            time.sleep(FAST.open_timeout_s + 1)  # a reopen against the frozen server times out by itself
        assert wait_for(lambda: worker.state is S.STREAMING, 30), worker.stats()
        assert not [t.name for t in threading.enumerate() if t.name.endswith(":abandoned")]
    finally:
        assert timed_stop(worker) < 5


@pytest.mark.parametrize("format_", [FrameFormat.BGR, FrameFormat.NV12])
def test_grab_takes_a_frame_without_converting_it(tmp_path, format_):
    """Frames the camera will not analyse (fps_limit, an idle motion gate): grabbed, not copied out."""
    clip = encode(tmp_path / "g.mp4", ("-c:v", "libx264"))
    source = GstSource(parse_source(str(clip)), open_timeout_s=10, read_timeout_s=5, frame_format=format_)
    frames = Nv12Frames(source) if format_ is FrameFormat.NV12 else source
    taken = []
    try:
        while True:
            if not frames.grab():
                break
            image = frames.read()
            if image is None:
                break
            taken.append(image)
    finally:
        frames.release()
    assert len(taken) == 10  # every other of the 20 frames read, the rest grabbed


def test_a_recorded_mjpeg_stream_says_recording_is_unavailable_and_still_decodes(tmp_path):
    from tests.support.packets import CollectingSink

    clip = encode(tmp_path / "m.avi", ("-c:v", "mjpeg", "-q:v", "5"))
    sink = CollectingSink()
    source = GstSource(parse_source(str(clip)), open_timeout_s=10, read_timeout_s=5, packet_sink=sink)
    try:
        images = [source.read() for _ in range(5)]
    finally:
        source.release()
    assert all(image is not None for image in images) and source.codec is Codec.JPEG
    assert sink.kinds() == ["unavailable"] and "MJPEG" in sink.of("unavailable")[0]
