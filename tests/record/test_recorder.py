"""Event clips and continuous segments written from real H.264 and H.265 packets, checked with ffprobe."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest

from edge_app.record.recorder import CameraRecorder
from edge_app.record.store import RecordingStore
from tests.record.feeding import record, settings
from tests.record.media import BASE_WALL, FRAME_S, GOP_S, due_wall, ffprobe, shifted
from testkit.waiting import wait_for


def _started(event_id, at):
    return lambda rec: rec.event_started(event_id, "cam1", at)


def _ended(event_id, at):
    return lambda rec: rec.event_ended(event_id, at)


@pytest.mark.parametrize("pre_s, post_s, start_off, end_off", [
    (2.0, 1.0, 5.0, 7.0),
    (5.0, 2.0, 6.5, 8.2),
    (0.0, 0.0, 4.3, 5.1),
    (3.0, 1.5, 1.0, 3.0),   # the pre-roll reaches back before the stream's start: from its first keyframe
])
def test_event_clip_covers_the_event(tmp_path, stream, codec, pre_s, post_s, start_off, end_off):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start, end = BASE_WALL + start_off, BASE_WALL + end_off
    recorder, seen = record(store, settings(pre_s=pre_s, post_s=post_s), [(info, packets)],
                            {start: [_started("ev1", start)], end: [_ended("ev1", end)]})
    clip = store.clip("ev1")
    assert clip is not None and clip.complete and clip.part == 0
    probe = ffprobe(store.resolve(clip.path))
    assert probe.errors == "" and probe.codec == codec
    assert probe.tag == ("hvc1" if codec == "hevc" else "avc1")
    first_wall = clip.start
    last_wall = clip.start + (probe.last_s - probe.first_s)
    wanted_first = max(BASE_WALL, start - pre_s)
    assert wanted_first - GOP_S - 1e-6 <= first_wall <= wanted_first + 1e-6
    assert last_wall >= end + post_s - FRAME_S - 1e-6
    assert last_wall <= end + post_s + 6 * FRAME_S + 1e-6  # and the B-frames' reordering delay
    assert [c.complete for c in seen][-1] is True and seen[0].complete is False
    assert store.clips("ev1") == [clip]
    assert recorder.status().packets_dropped == 0


def test_a_long_event_continues_in_parts_without_losing_a_frame(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start, end = BASE_WALL + 2.0, BASE_WALL + 10.0
    record(store, settings(pre_s=1.0, post_s=1.0, max_s=3.0), [(info, packets)],
           {start: [_started("ev1", start)], end: [_ended("ev1", end)]})
    parts = store.clips("ev1")
    assert [p.part for p in parts] == list(range(len(parts))) and len(parts) == 4
    frames = 0
    for before, after in zip(parts, parts[1:]):
        assert after.start == pytest.approx(before.end, abs=FRAME_S + 1e-6)  # each part starts where the last ended
    for part in parts:
        probe = ffprobe(store.resolve(part.path))
        assert probe.errors == "" and part.duration_s <= 3.0 + GOP_S
        frames += probe.frames
    # every packet in decode order from the first keyframe up to the first one due after end + post_s
    first = next(i for i, p in enumerate(packets) if p.keyframe and abs(p.wall_ts - parts[0].start) < 1e-3)
    after = next(i for i, p in enumerate(packets) if due_wall(p, info) > end + 1.0)
    assert frames == after - first


def test_a_reconnect_gives_a_gap_not_a_broken_file(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    first, second = packets[:150], packets[:150]
    later = shifted(second, pts_offset=-987_654, wall_offset_s=7.0)  # its own pts origin, 2 s after the first ended
    start, end = BASE_WALL + 3.0, BASE_WALL + 9.0
    record(store, settings(pre_s=1.0, post_s=0.5), [(info, first), (info.__class__(**info.__dict__), later)],
           {start: [_started("ev1", start)], end: [_ended("ev1", end)]})
    clip = store.clip("ev1")
    probe = ffprobe(store.resolve(clip.path))
    assert probe.errors == ""
    # 2 s of the first connection, a 2 s gap, 2.5 s of the second: the timeline follows the wall clock
    assert probe.last_s - probe.first_s == pytest.approx(9.5 - 2.0, abs=6 * FRAME_S)  # B-frames may show up to 5 frames after they are due
    assert probe.frames == len([p for p in first if p.wall_ts >= BASE_WALL + 2.0]) + len(
        [p for p in later if due_wall(p, info) <= end + 0.5])


@pytest.mark.parametrize("segment_s", [3.0, 5.0])
def test_continuous_segments_start_at_keyframes_and_cover_the_stream(tmp_path, stream, segment_s):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    record(store, settings(events=False, continuous=True, segment_s=segment_s), [(info, packets)])
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 100)
    assert segments[0].path == "cam1/20231114T221320Z.mp4"
    assert segments[0].start == BASE_WALL
    frames = 0
    for segment in segments:
        probe = ffprobe(store.resolve(segment.path))
        assert probe.errors == ""
        assert probe.duration_s <= segment_s + GOP_S + 1e-6
        frames += probe.frames
    assert frames == len(packets)
    assert sum(s.bytes for s in segments) > sum(len(p.data) for p in packets)
    assert store.segments("cam1", BASE_WALL + 100, BASE_WALL + 200) == []
    assert store.segments("other", BASE_WALL - 1, BASE_WALL + 100) == []


def test_a_wall_clock_stepped_back_does_not_stop_segments_and_parts_from_rotating(tmp_path, stream):
    """NTP correcting a clock set an hour ahead steps wall time back mid-connection: segments and
    clip parts still end after segment_s / max_s of video, not once the clock has caught up."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    half = len(packets) // 2
    stepped = packets[:half] + shifted(packets[half:], pts_offset=0, wall_offset_s=-3600.0)
    start = BASE_WALL + 0.5
    record(store, settings(pre_s=0.5, post_s=0.0, max_s=3.0, continuous=True, segment_s=3.0), [(info, stepped)],
           {start: [_started("ev1", start)]})
    segments = store.segments("cam1", BASE_WALL - 7200, BASE_WALL + 100)
    parts = store.clips("ev1")
    for files in (segments, parts):
        durations = [ffprobe(store.resolve(f.path)).duration_s for f in files]
        assert len(files) >= 3 and max(durations) <= 3.0 + GOP_S + 1e-6, durations


def test_a_deleted_event_loses_its_clip(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start = BASE_WALL + 3.0
    record(store, settings(), [(info, packets)], {
        start: [_started("ev1", start), _started("ev2", start)],
        start + 1: [_ended("ev1", start + 1), _ended("ev2", start + 1)],
        start + 3: [lambda rec: rec.event_deleted("ev1")]})
    assert store.clip("ev1") is None and not (store.folder / "cam1/events/ev1.mp4").exists()
    assert store.clip("ev2") is not None


def test_an_event_deleted_while_its_clip_is_written_loses_it(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start = BASE_WALL + 3.0
    record(store, settings(), [(info, packets)], {
        start: [_started("ev1", start)], start + 2: [lambda rec: rec.event_deleted("ev1")]})
    assert store.index.all() == [] and not list(store.folder.rglob("*.mp4"))


def test_a_clip_folder_that_cannot_be_made_costs_that_clip_not_the_recorder(tmp_path, stream):
    """A file where the camera's clip folder should be (or EACCES, EDQUOT) fails the clip's file
    at its creation; the recorder says why and goes on: the continuous segment and a later
    clip, once the folder can be made, are written."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    (store.folder / "cam1").mkdir(parents=True)
    (store.folder / "cam1" / "events").write_bytes(b"not a folder")
    first, second = BASE_WALL + 1.0, BASE_WALL + 5.0
    record(store, settings(pre_s=0.5, post_s=0.5, continuous=True, segment_s=60.0), [(info, packets)], {
        first: [_started("ev1", first)], first + 1: [_ended("ev1", first + 1)],
        second - 0.5: [lambda rec: (rec.wait_idle(10), (store.folder / "cam1" / "events").unlink())],
        second: [_started("ev2", second)], second + 1: [_ended("ev2", second + 1)]})
    assert store.clip("ev1") is None
    clip = store.clip("ev2")
    assert clip is not None and ffprobe(store.resolve(clip.path)).errors == ""
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 100)
    assert segments and ffprobe(store.resolve(segments[-1].path)).errors == ""
    assert segments[-1].end >= packets[-1].wall_ts - 1.0  # the segment went on to the end of the stream


def test_an_unexpected_error_costs_the_open_files_not_the_recorder(tmp_path, stream, monkeypatch):
    """Whatever a file's writer raises, the recorder thread logs it, finishes its files as far as
    it can and goes on with the next packet (a dead thread would leave status saying it records)."""
    from edge_app.record import mp4

    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    real_write, calls = mp4.Fmp4Writer.write, []

    def failing_once(self, info, packet):
        calls.append(packet)
        if len(calls) == 60:
            raise RuntimeError("a bug in the writer")
        return real_write(self, info, packet)

    monkeypatch.setattr(mp4.Fmp4Writer, "write", failing_once)
    recorder, _ = record(store, settings(events=False, continuous=True, segment_s=60.0), [(info, packets)])
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 100)
    assert len(segments) == 2 and all(ffprobe(store.resolve(s.path)).errors == "" for s in segments)
    assert segments[-1].end >= packets[-1].wall_ts - 1.0
    assert recorder.status().recording is False  # stopped: nothing open


def test_events_of_other_cameras_and_disabled_clips_write_nothing(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    start = BASE_WALL + 3.0
    record(store, settings(), [(info, packets)],
           {start: [lambda rec: rec.event_started("ev1", "cam2", start)]})
    record(store, settings(events=False), [(info, packets)], {start: [_started("ev2", start)]})
    assert store.index.all() == []


def test_a_source_without_packets_says_why(tmp_path):
    store = RecordingStore(tmp_path / "rec")
    recorder, _ = record(store, settings(), [])
    recorder.unavailable("test:// has no compressed stream")
    assert recorder.status().unavailable == "recording unavailable: test:// has no compressed stream"


def test_a_clip_of_a_camera_that_went_offline_finishes_after_its_post_roll(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    now = time.time()
    live = [replace(p, wall_ts=p.wall_ts - BASE_WALL + now - 12.0) for p in packets]  # the last 12 s
    recorder = CameraRecorder(store, settings(pre_s=1.0, post_s=0.5), offline_finish_s=0.2,
                              queue_packets=100_000).start()
    try:
        recorder.stream_opened(info)
        recorder.event_started("ev1", "cam1", live[100].wall_ts)
        for packet in live:
            recorder.packet(packet)
        recorder.event_ended("ev1", live[-1].wall_ts)  # the camera is gone before post_s is over
        recorder.stream_closed("connection lost")
        clip = wait_for(lambda: store.clip("ev1") if store.clip("ev1") and store.clip("ev1").complete else None,
                        30, "the clip to finish without packets")
        assert ffprobe(store.resolve(clip.path)).errors == ""
    finally:
        recorder.stop()


def test_packets_that_do_not_fit_the_queue_are_counted_not_blocking(tmp_path, stream):
    info, packets = stream
    recorder = CameraRecorder(RecordingStore(tmp_path / "rec"), settings(), queue_packets=10)  # not started
    recorder.stream_opened(info)
    for packet in packets[:50]:
        recorder.packet(packet)
    assert recorder.status().packets_dropped == 50 - 10  # the connection's start takes no packet's room


def test_a_reconnect_while_the_queue_is_full_is_never_lost(tmp_path, stream):
    """A full queue and a camera that reconnects come together (a slow disk, a flapping link).
    The packets that do not fit are dropped; the end of the old connection and the start of the
    new one are not, or the new connection's packets are measured from the old one's origin
    (time jumps) or ignored while status says it records."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    first = packets[:150]
    later = shifted(packets[:150], pts_offset=-987_654, wall_offset_s=7.0)  # its own pts origin, 2 s after the first
    recorder = CameraRecorder(store, settings(events=False, continuous=True, segment_s=60.0),
                              queue_packets=len(first) + 1)  # not started: the first connection fills the queue
    recorder.stream_opened(info)
    for packet in first:
        recorder.packet(packet)
    recorder.stream_closed("connection lost")
    recorder.stream_opened(info.__class__(**info.__dict__))
    recorder.start()
    try:
        for packet in later:
            assert recorder.wait_idle(10)  # room for every packet of the second connection
            recorder.packet(packet)
    finally:
        recorder.stop(timeout_s=60)
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 100)
    frames = sum(ffprobe(store.resolve(s.path)).frames for s in segments)
    assert frames == len(first) + len(later)
    probe = ffprobe(store.resolve(segments[-1].path))
    assert probe.errors == ""
    # 5 s of the first connection, a 2 s gap, 5 s of the second: the timeline follows the wall clock
    assert segments[-1].end - segments[0].start == pytest.approx(12.0, abs=6 * FRAME_S)


def test_queued_bytes_are_bounded_too(tmp_path, stream):
    info, packets = stream
    budget = sum(len(p.data) for p in packets[:20])
    recorder = CameraRecorder(RecordingStore(tmp_path / "rec"), settings(), queue_bytes=budget)  # not started
    for packet in packets[:50]:
        recorder.packet(packet)
    assert recorder.status().packets_dropped == 30
