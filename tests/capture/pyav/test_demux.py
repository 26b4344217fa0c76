"""PyAV demuxing for NVDEC, without a GPU: real RTSP from gst-rtsp-server and real files, with the
packets checked by decoding them in software (what NVDEC's parser gets is a decodable Annex B
stream)."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from edge_app.capture.pyav.demux import AvDemuxer, ffmpeg_options, is_annexb
from edge_app.capture.sources import SourceError, SourceUnavailable
from tests.support.media import require_tool
from testkit.net import free_port
from testkit.skips import require_module

av = require_module("av")


def _software_decode(demuxer: AvDemuxer, max_packets: int):
    """Feeds the demuxer's packets to FFmpeg's software decoder: frames (w, h) and packet count."""
    decoder = av.CodecContext.create(demuxer.codec_name, "r")
    sizes, packets = [], 0
    for data, _pts in demuxer.packets():
        assert is_annexb(data.tobytes()), "NVDEC's parser needs start codes"
        packets += 1
        for frame in decoder.decode(av.Packet(data.tobytes())):
            sizes.append((frame.width, frame.height))
        if packets >= max_packets:
            break
    sizes += [(frame.width, frame.height) for frame in decoder.decode(None)]  # flush
    return sizes, packets


def test_mp4_file_packets_become_annexb_and_decode(bus_clip):
    demuxer = AvDemuxer(str(bus_clip), 5.0, 5.0)
    try:
        assert demuxer.codec_name == "h264" and (demuxer.width, demuxer.height) == (810, 1080)
        assert demuxer.fps > 0
        sizes, packets = _software_decode(demuxer, 1000)
    finally:
        demuxer.close()
    assert packets >= 10  # the whole clip
    assert len(sizes) == packets and set(sizes) == {(810, 1080)}


@pytest.mark.slow
def test_rtsp_stream_packets_decode(rtsp_server_factory, bus_clip):
    server = rtsp_server_factory({"bus": bus_clip})
    demuxer = AvDemuxer(server.url("bus"), 10.0, 5.0)
    try:
        assert demuxer.codec_name == "h264"
        sizes, packets = _software_decode(demuxer, 25)
    finally:
        demuxer.close()
    assert packets == 25
    assert len(sizes) == 25 and set(sizes) == {(810, 1080)}


@pytest.mark.slow
def test_rtsp_h265_stream_packets_decode(rtsp_server_factory, bus_jpg, tmp_path):
    require_tool("ffmpeg")
    clip = tmp_path / "bus265.mp4"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-loop", "1", "-framerate", "10", "-t", "2",
                    "-i", str(bus_jpg), "-vf", "scale=810:1080", "-c:v", "libx265",
                    "-x265-params", "bframes=0:keyint=5:log-level=error", str(clip)], check=True)
    server = rtsp_server_factory({"bus265": clip})
    demuxer = AvDemuxer(server.url("bus265"), 10.0, 5.0)
    try:
        assert demuxer.codec_name == "hevc"
        sizes, packets = _software_decode(demuxer, 10)
    finally:
        demuxer.close()
    assert packets == 10 and len(sizes) == 10 and set(sizes) == {(810, 1080)}


def test_nobody_listening_is_unavailable_not_an_error():
    with pytest.raises(SourceUnavailable, match=r"cannot open rtsp://user:\*\*\*@127.0.0.1"):
        AvDemuxer(f"rtsp://user:secret@127.0.0.1:{free_port()}/cam", 2.0, 2.0)


def test_credentials_are_masked_in_errors():
    with pytest.raises(SourceUnavailable) as caught:
        AvDemuxer(f"rtsp://user:secret@127.0.0.1:{free_port()}/cam", 2.0, 2.0)
    assert "secret" not in str(caught.value)


def test_a_codec_nvdec_cannot_take_is_a_permanent_error(tmp_path):
    require_tool("ffmpeg")
    clip = tmp_path / "mjpeg.avi"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5",
                    "-frames:v", "3", "-c:v", "mjpeg", str(clip)], check=True)
    with pytest.raises(SourceError, match="mjpeg, which NVDEC does not decode"):
        AvDemuxer(str(clip), 2.0, 2.0)


@pytest.mark.parametrize("target, env, expected", [
    ("rtsp://cam/x", {}, {"rtsp_transport": "tcp"}),
    ("RTSPS://cam/x", {}, {"rtsp_transport": "tcp"}),
    ("http://cam/x", {}, {}),
    ("rtsp://cam/x", {"OPENCV_FFMPEG_CAPTURE_OPTIONS": "rtsp_transport;udp"}, {"rtsp_transport": "udp"}),
    ("rtsp://cam/x", {"OPENCV_FFMPEG_CAPTURE_OPTIONS": "rtsp_transport;udp|stimeout;5000000|junk"},
     {"rtsp_transport": "udp", "stimeout": "5000000"}),
])
def test_ffmpeg_options_follow_the_opencv_path(target, env, expected):
    assert ffmpeg_options(target, env) == expected


@pytest.mark.parametrize("data, expected", [
    (b"\x00\x00\x00\x01gd", True), (b"\x00\x00\x01gd", True), (b"\x00\x00\x00\x1cgd", False), (b"\x01d", False),
])
def test_annexb_detection(data, expected):
    assert is_annexb(np.frombuffer(data, np.uint8).tobytes()) is expected


# -- the packets of a recorded camera (decoder nvdec): teed from the demuxer that feeds NVDEC ------
from tests.support.packets import CollectingSink, ffprobe_packets  # noqa: E402


def test_a_recorded_file_tees_every_packet_ffprobe_lists_before_the_annexb_filter(bus_clip):
    sink = CollectingSink()
    demuxer = AvDemuxer(str(bus_clip), 5.0, 5.0, packet_sink=sink)
    try:
        sizes, packets = _software_decode(demuxer, 1000)  # what NVDEC gets still decodes
    finally:
        demuxer.close("end of file")
    [connection] = sink.connections()
    codec, flags = ffprobe_packets(bus_clip)
    assert connection.info.codec == codec and connection.info.template is not None
    assert not is_annexb(connection.info.extradata)  # avcC: the packets are as the MP4 holds them
    assert [packet.keyframe for packet in connection.packets] == flags and len(sizes) == packets == len(flags)
    assert connection.closed == "end of file"


@pytest.mark.slow
@pytest.mark.parametrize("clip_name,codec", [("bus_clip", "h264"), ("bus_clip_h265", "hevc")])
def test_a_recorded_rtsp_stream_tees_what_nvdec_decodes(request, rtsp_server_factory, clip_name, codec, tmp_path):
    server = rtsp_server_factory({"cam": request.getfixturevalue(clip_name)})
    sink = CollectingSink()
    demuxer = AvDemuxer(server.url("cam"), 10.0, 5.0, packet_sink=sink)
    try:
        sizes, packets = _software_decode(demuxer, 30)
    finally:
        demuxer.close()
    [connection] = sink.connections()
    assert len(connection.packets) == packets == 30 and len(sizes) >= 25
    assert connection.closed == "closed"
    probed, flags = ffprobe_packets(connection.write_annexb(tmp_path / "teed.raw"), codec)
    assert probed == codec == connection.info.codec
    assert flags == [packet.keyframe for packet in connection.from_first_keyframe()] and sum(flags) >= 4


def test_a_stream_that_is_not_recorded_by_copy_says_so(tmp_path):
    clip = tmp_path / "mjpeg.avi"
    subprocess.run([require_tool("ffmpeg"), "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=5", "-t", "1",
                    "-c:v", "mjpeg", str(clip)], check=True)
    sink = CollectingSink()
    from edge_app.capture.pyav.source import AvSource
    from edge_app.config.source_spec import parse_source

    source = AvSource(parse_source(str(clip)), packet_sink=sink)  # decoder ffmpeg decodes it all the same
    try:
        assert source.read().shape == (120, 160, 3)
    finally:
        source.release()
    assert sink.kinds() == ["unavailable"] and "mjpeg" in sink.of("unavailable")[0]
