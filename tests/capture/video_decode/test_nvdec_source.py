"""``decoder: nvdec`` on a machine without PyNvVideoCodec or a GPU: clear, permanent errors, and
the same error kinds as the OpenCV path (the GPU half is tests/gpu/test_nvdec.py)."""
from __future__ import annotations

import importlib.util

import pytest

from edge_app.capture import CameraWorker, StreamState
from edge_app.capture.video_decode.nvdec_source import MISSING_MESSAGE, check_nvdec, open_nvdec
from edge_app.capture.sources import SourceError, SourceUnavailable
from edge_app.config.source_spec import parse_source
from tests.capture.helpers import FAST, StateLog, camera, timed_stop, wait_for

HAS_NVC = importlib.util.find_spec("PyNvVideoCodec") is not None


@pytest.mark.parametrize("source", ["test://bars", "/dev/video0", "gst:videotestsrc ! appsink", "csi://0"])
def test_sources_nvdec_cannot_read_are_refused(source):
    with pytest.raises(SourceError, match="decoder nvdec decodes files and rtsp/http streams"):
        open_nvdec(parse_source(source), FAST)
    with pytest.raises(SourceError, match="decoder nvdec decodes files and rtsp/http streams"):
        check_nvdec(parse_source(source))


def test_a_missing_file_is_unavailable_like_the_opencv_path(tmp_path):
    with pytest.raises(SourceUnavailable, match="does not exist"):
        open_nvdec(parse_source(str(tmp_path / "later.mp4")), FAST)


@pytest.mark.skipif(HAS_NVC, reason="PyNvVideoCodec is installed here")
@pytest.mark.parametrize("source_name", ["file", "rtsp"])
def test_without_pynvvideocodec_the_error_says_what_to_install(bus_clip, source_name):
    source = str(bus_clip) if source_name == "file" else "rtsp://127.0.0.1:9/cam"
    with pytest.raises(SourceError) as caught:
        open_nvdec(parse_source(source), FAST)
    assert MISSING_MESSAGE in str(caught.value) and "edge-app[nvdec]" in str(caught.value)


@pytest.mark.skipif(HAS_NVC, reason="PyNvVideoCodec is installed here")
def test_camera_with_decoder_nvdec_and_no_gpu_stops_in_error_without_retrying(bus_clip):
    log = StateLog()
    worker = CameraWorker(camera(str(bus_clip), decoder="nvdec"), FAST, on_state=log)
    worker.start()
    try:
        assert wait_for(lambda: worker.state is StreamState.ERROR, 10), worker.stats()
        assert "PyNvVideoCodec" in worker.last_error and "edge-app[nvdec]" in worker.last_error
        assert worker.stats()["reconnects"] == 0
    finally:
        assert timed_stop(worker) < 5
    assert log.states() == [StreamState.CONNECTING, StreamState.ERROR]
