"""File sources are opened as the file the folder rules checked, and as nothing else.

``file:<path>`` is FFmpeg's own spelling of a file: it opens that file (real OpenCV and PyAV),
relative paths are handed over as ``./<path>`` so no part of them reads as a protocol, and PyAV
reads a file with the file protocol alone.
"""
import shutil

import pytest

from edge_app.capture.pyav.container import ffmpeg_options
from edge_app.capture.pyav.source import AvSource
from edge_app.capture.sources import SourceError, open_source
from edge_app.config.source_spec import parse_source
from tests.support.packets import CollectingSink


@pytest.fixture
def clip_in_cwd(tmp_path, monkeypatch, bus_clip):
    monkeypatch.chdir(tmp_path)
    shutil.copy(bus_clip, tmp_path / "clip.mp4")
    # A file whose name FFmpeg would take for its concat protocol if handed over bare.
    shutil.copy(bus_clip, tmp_path / "concat:clip.mp4")
    return tmp_path


@pytest.mark.parametrize("source", ["file:clip.mp4", "clip.mp4", "./concat:clip.mp4", "file:concat:clip.mp4"])
def test_opencv_reads_the_file_a_file_source_names(clip_in_cwd, source):
    spec = parse_source(source)
    reader = open_source(spec, open_timeout_s=5, read_timeout_s=5)
    try:
        frame = reader.read()
        assert frame is not None and frame.shape[:2] == (1080, 810)
    finally:
        reader.release()


@pytest.mark.parametrize("source", ["file:clip.mp4", "./concat:clip.mp4"])
def test_pyav_reads_the_file_a_file_source_names(clip_in_cwd, source):
    reader = AvSource(parse_source(source), open_timeout_s=5, read_timeout_s=5, packet_sink=CollectingSink())
    try:
        assert reader.read() is not None
    finally:
        reader.release()


@pytest.mark.parametrize("target", ["/media/a.mp4", "./a.mp4"])
def test_pyav_reads_files_with_the_file_protocol_only(target):
    assert ffmpeg_options(target, environ={"OPENCV_FFMPEG_CAPTURE_OPTIONS": "protocol_whitelist;file,http,tcp"}) \
        == {"protocol_whitelist": "file"}
    assert "protocol_whitelist" not in ffmpeg_options("rtsp://cam/s", environ={})


@pytest.mark.parametrize("source", ["concat:clip.mp4|clip.mp4", "subfile,,start,0,end,4096,,:clip.mp4", "pipe:0",
                                    "data:video/mp4;base64,AAAAIGZ0eXA="])
def test_other_ffmpeg_protocols_never_reach_a_decoder(clip_in_cwd, source):
    with pytest.raises(SourceError, match="FFmpeg protocol"):
        parse_source(source)
