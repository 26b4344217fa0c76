"""The fragmented MP4 writer with streams as RTSP hands them out: Annex B packets, parameter sets
in band or in the extradata, and timestamps that start anywhere."""
from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from edge_app.record.mp4 import Fmp4Writer, complete_length, in_band_parameter_sets, trim_torn_tail
from tests.record.media import demux, ffprobe


@pytest.fixture(scope="session")
def annex_b(encoded_files, codec, tmp_path_factory):
    """The codec's file remuxed to MPEG-TS: Annex B packets with SPS/PPS(/VPS) before each keyframe."""
    out = tmp_path_factory.mktemp("annexb") / f"{codec}.ts"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(encoded_files[codec]), "-c", "copy",
                    "-f", "mpegts", str(out)], check=True)
    return demux(out, "cam1")


@pytest.mark.parametrize("extradata", ["in band only", "from the demuxer"])
def test_annex_b_packets_are_written_playable(tmp_path, annex_b, codec, extradata):
    info, packets = annex_b
    if extradata == "in band only":
        info = replace(info, extradata=b"")
        assert in_band_parameter_sets(codec, packets[0].data)
    out = tmp_path / "out.mp4"
    writer = Fmp4Writer(out, info, packets[0])
    for packet in packets:
        writer.write(info, packet)
    writer.close()
    probe = ffprobe(out)
    assert probe.errors == "" and probe.frames == len(packets)
    assert probe.tag == ("hvc1" if codec == "hevc" else "avc1")
    assert writer.duration_s == pytest.approx(len(packets) / 30, abs=0.05)


def test_a_torn_tail_is_cut_back_to_the_last_complete_fragment(tmp_path, stream):
    info, packets = stream
    writing = tmp_path / "writing.mp4"
    writer = Fmp4Writer(writing, info, packets[0])
    for packet in packets[:200]:
        writer.write(info, packet)
    on_disk = writing.read_bytes()  # what a kill -9 now leaves: fragments up to the last keyframe
    writer.close()
    out = tmp_path / "out.mp4"
    out.write_bytes(on_disk + b"\x00\x00\x10\x00moof" + b"\x01" * 100)  # and half a fragment
    assert complete_length(out) == len(on_disk)
    assert trim_torn_tail(out) == 108 and out.stat().st_size == len(on_disk)
    probe = ffprobe(out)
    assert probe.errors == "" and probe.frames == 180  # six whole GOPs
    assert trim_torn_tail(out) == 0
