"""A full file system (a 3 MiB tmpfs): writing pauses with the reason and resumes after files are freed."""
from __future__ import annotations

from dataclasses import replace

import pytest

from edge_app.record.recorder import CameraRecorder
from edge_app.record.retention import MB
from edge_app.record.store import RecordingStore
from tests.record.feeding import settings
from tests.record.media import ffprobe
from tests.support.tmpfs import mounted_tmpfs
from testkit.waiting import wait_for

IDLE_TIMEOUT_S = 120


@pytest.fixture()
def small_disk(tmp_path):
    with mounted_tmpfs(tmp_path / "small", "3m") as folder:
        yield folder


def _feed_loops(recorder, info, packets, loops, first_loop=0):
    length_s = packets[-1].wall_ts - packets[0].wall_ts + 1 / 30
    for loop in range(first_loop, first_loop + loops):
        connection = replace(info)
        recorder.stream_opened(connection)
        for packet in packets:
            recorder.packet(replace(packet, wall_ts=packet.wall_ts + loop * length_s))
        assert recorder.wait_idle(IDLE_TIMEOUT_S)


@pytest.mark.parametrize("reserve_mb", [1, 0])
def test_full_disk_pauses_with_the_reason_and_resumes(small_disk, stream, reserve_mb):
    info, packets = stream
    store = RecordingStore(small_disk / "rec")
    recorder = CameraRecorder(store, settings(events=False, continuous=True, segment_s=2.0),
                              reserve_bytes=reserve_mb * MB, queue_packets=100_000).start()
    try:
        loops = 0
        while recorder.status().paused is None:
            _feed_loops(recorder, info, packets, 1, loops)
            loops += 1
            assert loops < 40, "3 MiB never filled"
        reason = recorder.status().paused
        assert reason.startswith("disk below reserve: 0 MB free" if reserve_mb else "disk full")
        assert not recorder.status().recording
        paused_bytes = recorder.status().bytes_written
        _feed_loops(recorder, info, packets, 1, loops)  # still paused: nothing written, no crash
        assert recorder.status().paused is not None
        loops += 1
        assert recorder.status().bytes_written == paused_bytes
        # every file written before the pause is playable (up to its last fragment)
        for row in store.index.all():
            probe = ffprobe(store.folder / row.path)
            assert probe.errors == "" and probe.frames > 0, row.path
        store.delete([row.path for row in store.index.all()])
        _feed_loops(recorder, info, packets, 1, loops)
        wait_for(lambda: recorder.status().paused is None, IDLE_TIMEOUT_S, "recording to resume")
        assert recorder.status().bytes_written > paused_bytes
    finally:
        recorder.stop(timeout_s=60)
    assert store.index.all()
