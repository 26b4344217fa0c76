"""gst.pipeline: the pipelines decoder gstreamer runs, per source and platform (pure), and the
guarantee that no source string can add an element (checked with GStreamer's own parser)."""

import pytest

from edge_app.capture.gst.pipeline import (
    Codec, FrameFormat, GstPlatform, MissingElements, PipelineOptions, codec_from_caps, plan_pipeline, quote_value,
)
from edge_app.config.source_spec import SourceError, SourceKind, SourceSpec, parse_source

SOFTWARE = frozenset({"rtspsrc", "rtph264depay", "rtph265depay", "rtpjpegdepay", "h264parse", "h265parse", "jpegparse",
                      "avdec_h264", "avdec_h265", "jpegdec", "filesrc", "parsebin", "videoconvert", "appsink", "v4l2src",
                      "queue", "fakesink"})
DEBIAN = GstPlatform(SOFTWARE)
JETSON = GstPlatform(SOFTWARE | {"nvv4l2decoder", "nvvidconv", "nvarguscamerasrc", "nvjpegdec"}, nvv4l2decoder_mjpeg=True)
JETSON_OLD = GstPlatform(JETSON.elements, nvv4l2decoder_mjpeg=False)

LIVE_SINK = "appsink name=sink drop=true max-buffers=1 sync=false emit-signals=false"
FILE_SINK = "appsink name=sink drop=false max-buffers=2 sync=false emit-signals=false"
RTSP_HEAD = 'rtspsrc name=demux location="rtsp://cam/1" latency=200 drop-on-latency=true protocols=tcp tcp-timeout=10000000'
FILE_HEAD = 'filesrc name=file location="/v/a.mp4" ! parsebin name=demux'
NV12 = "nvvidconv ! video/x-raw,format=NV12"
SOFT_OUT = "videoconvert ! video/x-raw,format={ NV12, I420 }"


@pytest.mark.parametrize("source,platform,codec,line,hardware", [
    ("rtsp://cam/1", JETSON, Codec.H264, f"{RTSP_HEAD} ! rtph264depay ! h264parse ! nvv4l2decoder ! {NV12} ! {LIVE_SINK}", True),
    ("rtsp://cam/1", JETSON, Codec.H265, f"{RTSP_HEAD} ! rtph265depay ! h265parse ! nvv4l2decoder ! {NV12} ! {LIVE_SINK}", True),
    ("rtsp://cam/1", JETSON, Codec.JPEG, f"{RTSP_HEAD} ! rtpjpegdepay ! jpegparse ! nvv4l2decoder mjpeg=1 ! {NV12} ! {LIVE_SINK}", True),
    ("rtsp://cam/1", DEBIAN, Codec.H264, f"{RTSP_HEAD} ! rtph264depay ! h264parse ! avdec_h264 ! {SOFT_OUT} ! {LIVE_SINK}", False),
    ("rtsp://cam/1", DEBIAN, Codec.H265, f"{RTSP_HEAD} ! rtph265depay ! h265parse ! avdec_h265 ! {SOFT_OUT} ! {LIVE_SINK}", False),
    ("/v/a.mp4", JETSON, Codec.H264, f"{FILE_HEAD} ! queue ! h264parse ! nvv4l2decoder ! {NV12} ! {FILE_SINK}", True),
    ("/v/a.mp4", JETSON, Codec.H265, f"{FILE_HEAD} ! queue ! h265parse ! nvv4l2decoder ! {NV12} ! {FILE_SINK}", True),
    ("/v/a.mp4", DEBIAN, Codec.H264, f"{FILE_HEAD} ! queue ! h264parse ! avdec_h264 ! {SOFT_OUT} ! {FILE_SINK}", False),
    ("file:///v/a.mp4", DEBIAN, Codec.H265, f"{FILE_HEAD} ! queue ! h265parse ! avdec_h265 ! {SOFT_OUT} ! {FILE_SINK}", False),
    ("/v/a.mp4", DEBIAN, Codec.JPEG, f"{FILE_HEAD} ! queue ! jpegparse ! jpegdec ! {SOFT_OUT} ! {FILE_SINK}", False),
    ("/dev/video0", JETSON, None,
     f'v4l2src name=camera device="/dev/video0" ! image/jpeg ! nvv4l2decoder mjpeg=1 ! {NV12} ! {LIVE_SINK}', True),
    ("/dev/video1", JETSON_OLD, None,
     f'v4l2src name=camera device="/dev/video1" ! image/jpeg ! nvjpegdec ! {NV12} ! {LIVE_SINK}', True),
    ("/dev/video2", DEBIAN, None, f'v4l2src name=camera device="/dev/video2" ! image/jpeg ! jpegdec ! {SOFT_OUT} ! {LIVE_SINK}', False),
    ("csi://1", JETSON, None, "nvarguscamerasrc sensor-id=1 ! video/x-raw(memory:NVMM),width=1920,height=1080,"
                              f"framerate=30/1 ! {NV12} ! {LIVE_SINK}", True),
])
def test_pipeline_per_source_and_platform(source, platform, codec, line, hardware):
    plan = plan_pipeline(parse_source(source), platform)
    assert plan.launch_line(codec) == line
    assert plan.hardware is hardware
    assert plan.dynamic is (codec is not None)
    assert plan.live is (parse_source(source).kind is not SourceKind.FILE)


@pytest.mark.parametrize("platform,frame_format,caps", [
    (DEBIAN, FrameFormat.BGR, "video/x-raw,format={ NV12, I420 }"),  # I420 from avdec_h264 passes through
    (DEBIAN, FrameFormat.NV12, "video/x-raw,format=NV12"),
    (JETSON, FrameFormat.BGR, "video/x-raw,format=NV12"),  # the decoder's own layout either way
    (JETSON, FrameFormat.NV12, "video/x-raw,format=NV12"),
])
def test_appsink_caps_follow_the_frame_format(platform, frame_format, caps):
    plan = plan_pipeline(parse_source("rtsp://cam/1"), platform, PipelineOptions(frame_format=frame_format))
    assert plan.branches[Codec.H264].split(" ! ")[-2] == caps


def test_rtsp_options_reach_rtspsrc():
    plan = plan_pipeline(parse_source("rtsp://cam/1"), DEBIAN, PipelineOptions(latency_ms=50, open_timeout_s=2.5))
    assert "latency=50 " in plan.head and "tcp-timeout=2500000" in plan.head


@pytest.mark.parametrize("source,platform,message", [
    ("rtsp://cam/1", GstPlatform(SOFTWARE - {"rtspsrc"}), "rtspsrc; install gstreamer1.0-plugins-good"),
    ("/v/a.mp4", GstPlatform(SOFTWARE - {"parsebin"}), "parsebin; install gstreamer1.0-plugins-base"),
    ("csi://0", DEBIAN, "nvarguscamerasrc, nvvidconv; install JetPack"),
    ("/dev/video0", GstPlatform(SOFTWARE - {"jpegdec"}), "jpegdec; install gstreamer1.0-plugins-good"),
    ("http://cam/video.mjpg", DEBIAN, "use decoder ffmpeg"),
    ("gst:videotestsrc ! appsink", DEBIAN, "use decoder ffmpeg"),
    ("test://bars", DEBIAN, "use decoder ffmpeg"),
])
def test_sources_it_cannot_read_are_clear_errors(source, platform, message):
    with pytest.raises(SourceError, match=message.replace("(", r"\(")):
        plan_pipeline(parse_source(source), platform)


@pytest.mark.parametrize("missing,codec,package", [
    ({"avdec_h265"}, Codec.H265, "gstreamer1.0-libav"),
    ({"avdec_h264", "avdec_h265"}, Codec.H264, "gstreamer1.0-libav"),
    ({"h265parse"}, Codec.H265, "gstreamer1.0-plugins-bad"),
    ({"rtpjpegdepay"}, Codec.JPEG, "gstreamer1.0-plugins-good"),
])
def test_a_codec_without_its_elements_says_what_to_install(missing, codec, package):
    plan = plan_pipeline(parse_source("rtsp://cam/1"), GstPlatform(SOFTWARE - missing))
    assert codec not in plan.branches
    assert package in plan.unsupported[codec] and sorted(missing)[0] in plan.unsupported[codec]
    assert set(plan.branches) == set(Codec) - set(plan.unsupported)


def test_missing_elements_lists_each_package_once():
    err = MissingElements(("avdec_h264", "avdec_h265", "h264parse"), "decoding")
    assert str(err) == ("decoding needs the GStreamer elements avdec_h264, avdec_h265, h264parse; "
                        "install gstreamer1.0-libav and gstreamer1.0-plugins-bad")


@pytest.mark.parametrize("media_type,encoding,codec", [
    ("application/x-rtp", "H264", Codec.H264),
    ("application/x-rtp", "h265", Codec.H265),
    ("application/x-rtp", "JPEG", Codec.JPEG),
    ("application/x-rtp", "MPEG4-GENERIC", None),  # AAC audio
    ("application/x-rtp", None, None),
    ("video/x-h264", None, Codec.H264),
    ("video/x-h265", None, Codec.H265),
    ("image/jpeg", None, Codec.JPEG),
    ("video/x-vp8", None, None),
    ("audio/mpeg", None, None),
])
def test_codec_from_caps(media_type, encoding, codec):
    assert codec_from_caps(media_type, encoding) is codec


HOSTILE = [
    'rtsp://cam/a" ! filesink location=/tmp/pwned ! "',
    'rtsp://cam/a\\" ! filesink location=/tmp/pwned name=x',
    "rtsp://cam/a ! filesink location=/tmp/pwned",
    "rtsp://cam/a\n! filesink location=/tmp/pwned",
    "rtsp://user:p\"w!d@cam/a name=demux",
    "rtsp://cam/end\\",
    'rtsp://cam/"',
]


@pytest.mark.parametrize("url", HOSTILE)
def test_a_hostile_url_never_enters_the_launch_text(url):
    plan = plan_pipeline(SourceSpec(SourceKind.RTSP, url, live=True), DEBIAN)
    assert "pwned" not in plan.head and url not in plan.head
    assert [(p.element, p.name, p.value) for p in plan.properties] == [("demux", "location", url)]
    for branch in plan.branches.values():
        assert "pwned" not in branch


@pytest.mark.parametrize("value,quoted", [
    ("rtsp://cam/1", '"rtsp://cam/1"'),
    ('a"b', '"a\\"b"'),
    ("a\\b", '"a\\\\b"'),
    ('\\"', '"\\\\\\""'),
])
def test_quote_value(value, quoted):
    assert quote_value(value) == quoted


def _gst():
    from tests.support.gst import require_gi

    require_gi()  # through import_gst, which loads GStreamer without upsetting C++ exceptions
    from gi.repository import Gst

    return Gst


def _factories(Gst, element):
    if not isinstance(element, Gst.Bin) or element.get_factory().get_name() == "rtspsrc":
        return [element.get_factory().get_name()]
    names, it = [], element.iterate_elements()
    while True:
        result, child = it.next()
        if result != Gst.IteratorResult.OK:
            return sorted(names)
        names.append(child.get_factory().get_name())


@pytest.mark.parametrize("url", HOSTILE)
def test_gstreamer_builds_exactly_the_planned_elements_for_a_hostile_url(url):
    """What the source runs (head parsed, then the property set) and the logged launch line both
    give GStreamer's parser no way to add an element; the property holds the URL unchanged."""
    Gst = _gst()
    plan = plan_pipeline(SourceSpec(SourceKind.RTSP, url, live=True), DEBIAN)
    head = Gst.parse_launch(plan.head)
    assert _factories(Gst, head) == ["rtspsrc"]
    head.set_property("location", url)
    assert head.get_property("location") == url

    try:
        logged = Gst.parse_launch(plan.launch_line(Codec.H264))
    except Exception:  # GLib.Error: refusing to parse is safe too
        return
    expected = sorted(["rtspsrc", "rtph264depay", "h264parse", "avdec_h264", "videoconvert", "capsfilter", "appsink"])
    assert _factories(Gst, logged) == expected


@pytest.mark.parametrize("path", ['/v/a" ! filesink location=/tmp/pwned ! "', "/v/my clip!.mp4"])
def test_gstreamer_builds_exactly_the_planned_elements_for_a_hostile_path(path):
    Gst = _gst()
    plan = plan_pipeline(SourceSpec(SourceKind.FILE, path, live=False), DEBIAN)
    pipeline = Gst.parse_launch(plan.head)
    assert _factories(Gst, pipeline) == ["filesrc", "parsebin"]
    pipeline.get_by_name("file").set_property("location", path)
    assert pipeline.get_by_name("file").get_property("location") == path


H264_PACKETS = ("packets_tee. ! queue ! video/x-h264,stream-format=byte-stream,alignment=au ! "
                "appsink name=packets drop=false max-buffers=300 sync=false emit-signals=false")
H265_PACKETS = H264_PACKETS.replace("x-h264", "x-h265")
RATE5 = "videorate drop-only=true max-rate=5"


@pytest.mark.parametrize("source,platform,codec,options,line", [
    # recorded: a tee after the parser, parameter sets in band, the decoder on the other branch
    ("rtsp://cam/1", DEBIAN, Codec.H264, PipelineOptions(record=True),
     f"{RTSP_HEAD} ! rtph264depay ! h264parse config-interval=-1 ! tee name=packets_tee ! queue ! avdec_h264 ! "
     f"{SOFT_OUT} ! {LIVE_SINK} {H264_PACKETS}"),
    ("rtsp://cam/1", JETSON, Codec.H265, PipelineOptions(record=True),
     f"{RTSP_HEAD} ! rtph265depay ! h265parse config-interval=-1 ! tee name=packets_tee ! queue ! nvv4l2decoder ! "
     f"{NV12} ! {LIVE_SINK} {H265_PACKETS}"),
    ("/v/a.mp4", DEBIAN, Codec.H265, PipelineOptions(record=True),
     f"{FILE_HEAD} ! queue ! h265parse config-interval=-1 ! tee name=packets_tee ! queue ! avdec_h265 ! "
     f"{SOFT_OUT} ! {FILE_SINK} {H265_PACKETS}"),
    # MJPEG is never teed: nothing to copy into an MP4 of H.264/H.265
    ("rtsp://cam/1", DEBIAN, Codec.JPEG, PipelineOptions(record=True),
     f"{RTSP_HEAD} ! rtpjpegdepay ! jpegparse ! jpegdec ! {SOFT_OUT} ! {LIVE_SINK}"),
    # fps_limit: videorate right after the decoder, before nvvidconv / videoconvert
    ("rtsp://cam/1", JETSON, Codec.H264, PipelineOptions(max_fps=5),
     f"{RTSP_HEAD} ! rtph264depay ! h264parse ! nvv4l2decoder ! {RATE5} ! {NV12} ! {LIVE_SINK}"),
    ("rtsp://cam/1", DEBIAN, Codec.H264, PipelineOptions(max_fps=4.2),
     f"{RTSP_HEAD} ! rtph264depay ! h264parse ! avdec_h264 ! {RATE5} ! {SOFT_OUT} ! {LIVE_SINK}"),
    ("rtsp://cam/1", DEBIAN, Codec.H264, PipelineOptions(max_fps=0.5),
     f"{RTSP_HEAD} ! rtph264depay ! h264parse ! avdec_h264 ! videorate drop-only=true max-rate=1 ! {SOFT_OUT} ! {LIVE_SINK}"),
    ("rtsp://cam/1", JETSON, Codec.H264, PipelineOptions(max_fps=5, record=True),
     f"{RTSP_HEAD} ! rtph264depay ! h264parse config-interval=-1 ! tee name=packets_tee ! queue ! nvv4l2decoder ! "
     f"{RATE5} ! {NV12} ! {LIVE_SINK} {H264_PACKETS}"),
    ("/dev/video0", JETSON, None, PipelineOptions(max_fps=5, record=True),
     f'v4l2src name=camera device="/dev/video0" ! image/jpeg ! nvv4l2decoder mjpeg=1 ! {RATE5} ! {NV12} ! {LIVE_SINK}'),
    ("csi://0", JETSON, None, PipelineOptions(max_fps=5, record=True),
     "nvarguscamerasrc sensor-id=0 ! video/x-raw(memory:NVMM),width=1920,height=1080,"
     f"framerate=30/1 ! {RATE5} ! {NV12} ! {LIVE_SINK}"),
])
def test_recorded_and_rate_limited_pipelines(source, platform, codec, options, line):
    platform = GstPlatform(platform.elements | {"tee", "videorate"}, platform.nvv4l2decoder_mjpeg)
    plan = plan_pipeline(parse_source(source), platform, options)
    assert plan.launch_line(codec) == line


@pytest.mark.parametrize("source,no_packets", [
    ("rtsp://cam/1", None),
    ("/v/a.mp4", None),
    ("/dev/video0", "USB cameras send MJPEG"),
    ("csi://0", "CSI cameras deliver raw frames"),
])
def test_plans_say_when_they_have_no_packets_to_record(source, no_packets):
    platform = GstPlatform(JETSON.elements | {"tee", "videorate"}, True)
    plan = plan_pipeline(parse_source(source), platform, PipelineOptions(record=True))
    if no_packets is None:
        assert plan.no_packets is None
    else:
        assert no_packets in plan.no_packets


@pytest.mark.parametrize("options,missing", [
    (PipelineOptions(record=True), "tee"),
    (PipelineOptions(max_fps=5), "videorate"),
])
def test_recording_or_a_rate_limit_without_their_elements_says_what_to_install(options, missing):
    plan = plan_pipeline(parse_source("rtsp://cam/1"), DEBIAN, options)
    assert Codec.H264 not in plan.branches and missing in plan.unsupported[Codec.H264]


@pytest.mark.parametrize("options", [PipelineOptions(record=True), PipelineOptions(record=True, max_fps=3)])
def test_gstreamer_parses_the_recorded_branch(options):
    """The branch with its tee is one bin for GStreamer's own parser (one unlinked sink pad)."""
    from tests.support.gst import require_gi

    require_gi()
    from edge_app.capture.gst.source import import_gst, probe_platform

    Gst, _ = import_gst()
    plan = plan_pipeline(parse_source("rtsp://cam/1"), probe_platform(), options)
    for codec in (Codec.H264, Codec.H265):
        branch = Gst.parse_bin_from_description(plan.branches[codec], True)
        assert all(branch.get_by_name(name) is not None for name in ("sink", "packets", "packets_tee"))
        assert branch.get_static_pad("sink") is not None and branch.numsinkpads == 1
