"""PacketTee: what a camera promises its packet sink whatever its sources do (pure, no video)."""
from fractions import Fraction

import pytest

from edge_app.capture.packet_tee import PacketTee
from edge_app.capture.packets import EncodedPacket, StreamInfo

from tests.support.packets import CollectingSink

INFO = StreamInfo(camera_id="", codec="h264", width_px=640, height_px=360, time_base=Fraction(1, 90000))


def packet(pts):
    return EncodedPacket(b"\0\0\0\1" + bytes([pts % 256]), pts, pts, pts == 0, 0.0)


def test_the_camera_names_the_stream_and_closes_it_once():
    sink = CollectingSink()
    tee = PacketTee("door", sink)
    lease = tee.lease()
    lease.stream_opened(INFO)
    lease.packet(packet(0))
    tee.close("end of file")
    lease.stream_closed("source closed")  # the source's own close after the camera's: dropped
    assert sink.kinds() == ["opened", "packet", "closed"]
    assert sink.of("opened")[0].camera_id == "door" and sink.of("closed") == ["end of file"]


def test_a_stale_source_never_reaches_the_sink():
    """A capture thread the watchdog abandoned wakes up and goes on demuxing."""
    sink = CollectingSink()
    tee = PacketTee("door", sink)
    old = tee.lease()
    old.stream_opened(INFO)
    new = tee.lease()
    new.stream_opened(INFO)  # the old connection is closed first: opened/closed stay in pairs
    old.packet(packet(7))
    old.stream_closed("late")
    new.packet(packet(0))
    assert sink.kinds() == ["opened", "closed", "opened", "packet"]
    assert sink.of("packet")[0].pts == 0


def test_packets_after_a_close_are_dropped():
    sink = CollectingSink()
    tee = PacketTee("door", sink)
    lease = tee.lease()
    lease.stream_opened(INFO)
    tee.close("no frame for 10 s")
    lease.packet(packet(1))
    assert sink.kinds() == ["opened", "closed"]


@pytest.mark.parametrize("reasons,expected", [
    (["recording unavailable: a", "recording unavailable: a", "recording unavailable: a"], 1),
    (["recording unavailable: a", "recording unavailable: b"], 2),
])
def test_unavailable_is_said_once_per_reason_across_reconnects(reasons, expected):
    sink = CollectingSink()
    tee = PacketTee("door", sink)
    for reason in reasons:
        tee.lease().unavailable(reason)
    assert sink.count("unavailable") == expected


class BrokenSink(CollectingSink):
    def packet(self, packet):
        raise RuntimeError("disk on fire")


def test_a_sink_that_raises_does_not_stop_capture(caplog):
    sink = BrokenSink()
    tee = PacketTee("door", sink)
    lease = tee.lease()
    lease.stream_opened(INFO)
    for pts in range(5):
        lease.packet(packet(pts))
    tee.close("camera stopped")
    assert sink.kinds() == ["opened", "closed"]
    assert sum("packet sink failed" in record.message for record in caplog.records) == 1
