"""``edge-app selftest``'s decoder section: every decoder reported, one checked with a real clip."""
import io

import pytest

from edge_app.selftest import FAIL, PASS, SKIP, Report, check_decoders

from tests.support.gst import require_gi
from tests.support.media import require_tool


def lines(report):
    return [(status, name) for status, name, _ in report.results]


def test_reports_every_decoder_and_checks_the_one_auto_uses():
    require_tool("ffmpeg")
    report = Report(stream=io.StringIO())
    check_decoders(report, None)
    statuses = {name: status for status, name in lines(report)}
    assert set(statuses) >= {"decoder ffmpeg", "decoder gstreamer", "decoder nvdec"}
    assert statuses["decoder ffmpeg"] == PASS
    checked = [name for name in statuses if name.startswith("decode with ")]
    assert len(checked) == 1 and statuses[checked[0]] == PASS
    assert report.exit_code == 0  # a machine without a GPU or PyGObject fails nothing here
    assert "what decoder auto uses" in report.stream.getvalue()


def test_checks_the_decoder_asked_for():
    require_tool("ffmpeg")
    require_gi()
    report = Report(stream=io.StringIO())
    check_decoders(report, "gstreamer")
    assert (PASS, "decode with gstreamer") in lines(report)
    assert "10 frames of 640x480 H.264" in report.stream.getvalue()


@pytest.mark.parametrize("decoder,status", [("nvdec", FAIL)])
def test_a_decoder_asked_for_but_missing_fails(decoder, status):
    from edge_app.capture.decoders import detect_decoders

    if detect_decoders().get(decoder).available:
        pytest.skip(f"this machine has {decoder}")
    report = Report(stream=io.StringIO())
    check_decoders(report, decoder)
    assert (status, f"decode with {decoder}") in lines(report)
    assert (SKIP, f"decoder {decoder}") in lines(report)
