"""decoders: what auto picks per device and source (a table), what this machine really has, and
the dispatch CameraWorker goes through."""
import pytest

from edge_app.capture.video_decode.decoders import (
    CameraOpener, DecoderInfo, DecoderInventory, detect_decoders, detect_ffmpeg, detect_nvdec, resolve_decoder,
)
from edge_app.capture.sources import opencv_has_gstreamer
from edge_app.capture.synthetic import SyntheticSource
from edge_app.config.schema import CaptureConfig
from edge_app.config.source_spec import SourceError, parse_source

from tests.support.gst import require_gi


def inventory(gstreamer=None, nvdec=False):
    """gstreamer: None (absent), "software" or "hardware"."""
    return DecoderInventory((
        DecoderInfo("ffmpeg", True, False, "OpenCV"),
        DecoderInfo("gstreamer", gstreamer is not None, gstreamer == "hardware", "GStreamer"),
        DecoderInfo("nvdec", nvdec, True, "PyNvVideoCodec"),
    ))


JETSON = inventory("hardware")
DEBIAN_GST = inventory("software")
PLAIN = inventory()
DGPU = inventory("software", nvdec=True)
WITH_NVDEC = {"ffmpeg": None, "gstreamer": None, "nvdec": None}
WITHOUT_NVDEC = {"ffmpeg": None, "gstreamer": None}


@pytest.mark.parametrize("requested,source,device,openers,expected", [
    # auto on a Jetson: hardware GStreamer for what it reads, ffmpeg for the rest
    ("auto", "rtsp://cam/1", JETSON, WITHOUT_NVDEC, "gstreamer"),
    ("auto", "/clips/a.mp4", JETSON, WITHOUT_NVDEC, "gstreamer"),
    ("auto", "csi://0", JETSON, WITHOUT_NVDEC, "gstreamer"),
    ("auto", "/dev/video0", JETSON, WITHOUT_NVDEC, "ffmpeg"),  # may be a raw YUYV camera
    ("auto", "http://cam/v.mjpg", JETSON, WITHOUT_NVDEC, "ffmpeg"),
    ("auto", "gst:videotestsrc ! appsink", JETSON, WITHOUT_NVDEC, "ffmpeg"),
    # software GStreamer is never chosen by auto: FFmpeg decodes as fast on the CPU
    ("auto", "rtsp://cam/1", DEBIAN_GST, WITHOUT_NVDEC, "ffmpeg"),
    ("auto", "rtsp://cam/1", PLAIN, WITHOUT_NVDEC, "ffmpeg"),
    # a dGPU host with PyNvVideoCodec: nvdec once it has an opener
    ("auto", "rtsp://cam/1", DGPU, WITH_NVDEC, "nvdec"),
    ("auto", "/clips/a.mp4", DGPU, WITH_NVDEC, "nvdec"),
    ("auto", "rtsp://cam/1", DGPU, WITHOUT_NVDEC, "ffmpeg"),
    ("auto", "/dev/video0", DGPU, WITH_NVDEC, "ffmpeg"),
    # explicit choices stand (and fail clearly when they cannot work)
    ("gstreamer", "rtsp://cam/1", PLAIN, WITHOUT_NVDEC, "gstreamer"),
    ("gstreamer", "/dev/video0", DEBIAN_GST, WITHOUT_NVDEC, "gstreamer"),
    ("gstreamer", "gst:videotestsrc ! appsink", DEBIAN_GST, WITHOUT_NVDEC, "ffmpeg"),  # OpenCV runs gst: as given
    ("ffmpeg", "rtsp://cam/1", JETSON, WITHOUT_NVDEC, "ffmpeg"),
    ("nvdec", "rtsp://cam/1", PLAIN, WITHOUT_NVDEC, "nvdec"),
    # test:// is drawn in Python whatever the decoder
    ("gstreamer", "test://bars", JETSON, WITHOUT_NVDEC, "ffmpeg"),
    ("auto", "test://bars", JETSON, WITHOUT_NVDEC, "ffmpeg"),
])
def test_resolve_decoder(requested, source, device, openers, expected):
    assert resolve_decoder(requested, parse_source(source), device, openers) == expected


def test_camera_opener_dispatches_through_its_table():
    opened = []

    def fake_gst(spec, capture):  # a recording opener: the table is the extension point
        opened.append(spec.target)
        return SyntheticSource("bars", 32, 24, 5)

    opener = CameraOpener("auto", openers={"ffmpeg": fake_gst, "gstreamer": fake_gst}, inventory=lambda: JETSON)
    source = opener(parse_source("rtsp://cam/1"), CaptureConfig())
    assert opened == ["rtsp://cam/1"] and source.read().shape == (24, 32, 3)


def test_test_sources_open_with_any_decoder():
    for decoder in ("auto", "ffmpeg", "gstreamer", "nvdec"):
        source = CameraOpener(decoder)(parse_source("test://box?width=64&height=48"), CaptureConfig())
        assert isinstance(source, SyntheticSource) and source.read().shape == (48, 64, 3)


def test_decoder_nvdec_without_an_opener_is_a_clear_error():
    with pytest.raises(SourceError, match="PyNvVideoCodec|cannot decode with nvdec yet"):
        CameraOpener("nvdec")(parse_source("rtsp://cam/1"), CaptureConfig())


def test_nvdec_is_in_the_default_tables():
    opener = CameraOpener("nvdec")
    assert "nvdec" in opener.openers and "nvdec" in opener.checks
    if not detect_nvdec().available:  # no PyNvVideoCodec or no GPU: refused before any open
        with pytest.raises(SourceError, match=r"edge-app\[nvdec\]"):
            opener.check(parse_source("rtsp://cam/1"))


def test_csi_checks_follow_the_decoder():
    """csi:// needs OpenCV's GStreamer with ffmpeg, JetPack's Argus element with gstreamer."""
    import cv2

    spec = parse_source("csi://0")
    if not opencv_has_gstreamer(cv2.getBuildInformation()):
        with pytest.raises(SourceError, match="no GStreamer support"):
            CameraOpener("ffmpeg").check(spec)
    require_gi()
    with pytest.raises(SourceError, match="nvarguscamerasrc.*JetPack"):
        CameraOpener("gstreamer").check(spec)


def test_this_machine_reports_every_decoder():
    report = detect_decoders()
    assert [info.name for info in report.decoders] == ["ffmpeg", "gstreamer", "nvdec"]
    assert all(isinstance(info, DecoderInfo) and info.detail for info in report.decoders)
    assert detect_ffmpeg().available  # the test extra installs OpenCV
    assert report.available[0] == "ffmpeg"
    nvdec = detect_nvdec()
    assert nvdec.hardware and (nvdec.available or "PyNvVideoCodec" in nvdec.detail)


def test_software_gstreamer_is_reported_with_its_codecs():
    require_gi()
    info = detect_decoders().get("gstreamer")
    assert info.available, info.detail
    if not info.hardware:
        assert "software decode (h264, h265, jpeg)" in info.detail
