"""A recorded camera's compressed packets, for real: the gst-rtsp-server test server with H.264
and H.265 clips, decoders ffmpeg (PyAV) and gstreamer (Debian's software pipeline), a collecting
PacketSink, ffprobe as the judge. One connection per camera: the packets and the analysed
frames come from the same demuxer."""
from fractions import Fraction

import pytest

from edge_app.capture import CameraWorker, StreamState
from edge_app.capture.pyav.source import AvSource

from tests.capture.helpers import FAST, camera, drain, timed_stop, wait_for
from tests.support.gst import require_gi
from tests.support.packets import CollectingSink, ffprobe_packets

S = StreamState
pytestmark = pytest.mark.slow
#: the clips' keyframe interval in packets (tests/support/media.py: one every half second at 10 fps)
GOP = 5


def worker_for(url, decoder, sink, **options):
    if decoder == "gstreamer":
        require_gi()
    return CameraWorker(camera(url, decoder=decoder, **options), FAST, packet_sink=sink)


@pytest.fixture
def clips(bus_clip, bus_clip_h265):
    return {"h264": bus_clip, "hevc": bus_clip_h265}


@pytest.mark.parametrize("decoder,codec", [
    ("ffmpeg", "h264"), ("ffmpeg", "hevc"), ("gstreamer", "h264"), ("gstreamer", "hevc"),
])
def test_rtsp_packets_are_the_stream_ffprobe_sees(rtsp_server_factory, clips, decoder, codec, tmp_path):
    server = rtsp_server_factory({"cam": clips[codec]})
    sink = CollectingSink()
    worker = worker_for(server.url("cam"), decoder, sink)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is S.STREAMING, 20), worker.stats()
        frames = drain(worker, lambda: sink.count("packet") >= 6 * GOP, 30)
    finally:
        assert timed_stop(worker) < 5
    assert frames, "frames still reach the analysis"
    [connection] = sink.connections()
    assert connection.closed == "camera stopped"
    assert (connection.info.camera_id, connection.info.codec) == ("cam1", codec)
    assert (connection.info.width_px, connection.info.height_px) == (810, 1080)
    packets = connection.from_first_keyframe()
    dts = [packet.dts for packet in packets]
    assert dts == sorted(set(dts)), "decode times only grow within a connection"
    assert [packet.pts for packet in packets] == dts, "no B-frames in the clips: presentation order is decode order"

    probed_codec, flags = ffprobe_packets(connection.write_annexb(tmp_path / "stream.raw"), codec)
    assert probed_codec == codec
    assert len(flags) == len(packets)
    assert flags == [packet.keyframe for packet in packets]
    assert sum(flags) == connection.keyframes and sum(flags) >= 5
    assert all(index % GOP == 0 for index, key in enumerate(flags) if key), "one keyframe every GOP packets"


@pytest.mark.parametrize("decoder", ["ffmpeg", "gstreamer"])
def test_a_killed_rtsp_server_closes_the_stream_then_it_opens_again(rtsp_server_factory, bus_clip, decoder):
    server = rtsp_server_factory({"cam": bus_clip})
    sink = CollectingSink()
    worker = worker_for(server.url("cam"), decoder, sink)
    worker.start()
    try:
        assert wait_for(lambda: sink.count("packet") >= 2 * GOP, 20), worker.stats()
        server.stop()
        assert wait_for(lambda: sink.count("closed") == 1, 20), sink.kinds()[-5:]
        assert worker.state is S.RECONNECTING
        server.start()
        assert wait_for(lambda: len(sink.connections()) == 2 and len(sink.connections()[1].packets) >= 2 * GOP, 30)
        assert worker.state is S.STREAMING
    finally:
        assert timed_stop(worker) < 5
    first, second = sink.connections()
    assert first.closed and first.closed not in ("camera stopped", "end of file")  # the failure's reason
    assert second.closed == "camera stopped"
    for connection in (first, second):
        dts = [packet.dts for packet in connection.packets]
        assert dts == sorted(set(dts))
        assert connection.keyframes >= 1
    assert sink.count("unavailable") == 0


@pytest.mark.parametrize("decoder,clip_name,codec", [
    ("ffmpeg", "bus_clip", "h264"), ("ffmpeg", "bus_clip_h265", "hevc"),
    ("gstreamer", "bus_clip", "h264"), ("gstreamer", "bus_clip_h265", "hevc"),
])
def test_a_file_hands_over_every_packet_ffprobe_lists(request, decoder, clip_name, codec, tmp_path):
    clip = request.getfixturevalue(clip_name)
    probed_codec, flags = ffprobe_packets(clip)
    sink = CollectingSink()
    worker = worker_for(str(clip), decoder, sink, realtime=False)
    worker.start()
    try:
        frames = drain(worker, lambda: worker.state is S.STOPPED, 30)
    finally:
        timed_stop(worker)
    [connection] = sink.connections()
    assert connection.closed == "end of file"
    assert connection.info.codec == probed_codec == codec
    assert [packet.keyframe for packet in connection.packets] == flags
    if decoder == "ffmpeg":  # PyAV: the MP4's own packets, avcC/hvcC and the stream for a stream copy
        assert connection.info.extradata and connection.info.template is not None
    else:  # GStreamer: Annex B access units with their parameter sets in band
        assert connection.info.extradata == b"" and connection.info.time_base == 1 / Fraction(10 ** 9)
        assert ffprobe_packets(connection.write_annexb(tmp_path / "file.raw"), codec) == (codec, flags)
    assert len(frames) == len(flags)  # every frame analysed too (realtime: false)


def test_frames_the_gate_skips_are_still_recorded(bus_clip):
    """fps_limit 2 on a 10 fps file: 4 of 5 frames are only grabbed, every packet is recorded."""
    sink = CollectingSink()
    worker = CameraWorker(camera(str(bus_clip), decoder="ffmpeg", fps_limit=2), FAST, packet_sink=sink)
    worker.start()
    try:
        frames = drain(worker, lambda: worker.state is S.STOPPED, 30)
    finally:
        timed_stop(worker)
    _, flags = ffprobe_packets(bus_clip)
    assert len(sink.connections()[0].packets) == len(flags)
    assert 0 < len(frames) < len(flags) / 2
    assert worker.stats()["frames_captured"] == len(flags)


@pytest.mark.parametrize("source,decoder,why", [
    ("test://bars", "ffmpeg", "test:// sources are drawn"),
    ("test://bars", "gstreamer", "test:// sources are drawn"),
    ("{bus_jpg}", "ffmpeg", "the stream is mjpeg"),
])
def test_sources_without_a_compressed_stream_say_why_once(source, decoder, why, bus_jpg):
    sink = CollectingSink()
    worker = CameraWorker(camera(source.format(bus_jpg=bus_jpg), decoder=decoder, loop=True), FAST, packet_sink=sink)
    worker.start()
    try:
        assert wait_for(lambda: worker.stats()["frames_captured"] >= 5, 20), worker.stats()
    finally:
        timed_stop(worker)
    assert sink.kinds() == ["unavailable"]  # once, not per reconnect or loop
    [reason] = sink.of("unavailable")
    assert reason.startswith("recording unavailable: ") and why in reason


def test_without_a_sink_the_opencv_path_is_unchanged(bus_clip):
    worker = CameraWorker(camera(str(bus_clip), decoder="ffmpeg", realtime=False), FAST)
    opened = []
    original = worker._opener

    def opener(spec, capture, **kwargs):
        assert not kwargs, "no packet_sink= without a sink"
        source = original(spec, capture)
        opened.append(source)
        return source

    worker._opener = opener
    worker.start()
    try:
        drain(worker, lambda: worker.state is S.STOPPED, 30)
    finally:
        timed_stop(worker)
    assert opened and not any(isinstance(source, AvSource) for source in opened)
    assert type(opened[0]).__name__ == "OpenCVSource"


def test_gstreamer_drops_frames_above_fps_limit_before_conversion(rtsp_server_factory, bus_clip):
    """videorate after the decoder: 2 of the stream's 10 frames/s reach the appsink, while every
    packet still reaches the sink."""
    require_gi()
    from edge_app.capture.gst.source import GstSource
    from edge_app.config.source_spec import parse_source

    server = rtsp_server_factory({"cam": bus_clip})
    sink = CollectingSink()
    source = GstSource(parse_source(server.url("cam")), open_timeout_s=10, read_timeout_s=5, packet_sink=sink,
                       max_fps=2)
    frames = 0
    try:
        assert "videorate drop-only=true max-rate=2" in source.plan.launch_line(source.codec)
        while sink.count("packet") < 8 * GOP:
            assert source.read() is not None
            frames += 1
    finally:
        source.release()
    packets = len(sink.connections()[0].packets)
    assert 2 <= frames <= packets * 2 / 10 + 2


def test_the_camera_hands_its_fps_limit_to_decoder_gstreamer():
    worker = CameraWorker(camera("rtsp://cam/1", decoder="gstreamer", fps_limit=2.5), FAST)
    assert worker._opener.openers["gstreamer"].keywords == {"max_fps": 2.5}
    files = CameraWorker(camera("/v/a.mp4", decoder="gstreamer", fps_limit=2.5, realtime=False), FAST)
    assert not hasattr(files._opener.openers["gstreamer"], "keywords")  # a file read without loss drops nothing
