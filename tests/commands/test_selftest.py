"""``edge-app selftest``'s decoder section: every decoder reported, one checked with a real clip."""
import io

import pytest

from edge_app.commands.selftest import FAIL, PASS, SKIP, Report, check_decoders

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
    from edge_app.capture.video_decode.decoders import detect_decoders

    if detect_decoders().get(decoder).available:
        pytest.skip(f"this machine has {decoder}")
    report = Report(stream=io.StringIO())
    check_decoders(report, decoder)
    assert (status, f"decode with {decoder}") in lines(report)
    assert (SKIP, f"decoder {decoder}") in lines(report)


@pytest.mark.parametrize("users, status", [(None, "WARN"), ({"dev1": "dev1-Pa55"}, PASS)])
def test_the_broker_section_warns_when_the_broker_lets_anyone_in(mosquitto_factory, users, status):
    from edge_app.config.file import parse_config
    from edge_app.commands.selftest import check_broker

    broker = mosquitto_factory(users=users)
    config = parse_config({"model": {"path": "m.onnx"},
                           "mqtt": {"host": broker.host, "port": broker.port, "username": "dev1", "password": "dev1-Pa55"}})
    report = Report(stream=io.StringIO())
    check_broker(report, config)
    assert lines(report) == [(status, f"MQTT broker {broker.host}:{broker.port}")]
    assert report.exit_code == 0  # a warning, not a failed device
