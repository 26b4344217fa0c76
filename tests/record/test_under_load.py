"""A recorder behind its camera (a loaded CPU, a slow disk) loses no pre-roll it could keep, drops
whole GOP tails rather than single frames, and counts what it lost."""
from __future__ import annotations

import pytest

from edge_app.record.inbox import Inbox
from edge_app.record.recorder import CameraRecorder
from edge_app.record.ring import DEFAULT_LATE_S
from edge_app.record.store import RecordingStore
from tests.record.feeding import PLENTY_FREE, settings
from tests.record.media import BASE_WALL, FRAME_S, GOP_FRAMES, GOP_S, ffprobe


def record_in_step(store, config, info, packets, orders):
    """Like ``feeding.record``, but each order waits until the recorder has taken every packet
    before it: the order is late by exactly the wall-clock time it is given at, never by chance."""
    recorder = CameraRecorder(store, config, free_bytes=lambda: PLENTY_FREE, reserve_bytes=0,
                              queue_packets=100_000).start()
    pending = sorted(orders.items())
    recorder.stream_opened(info)
    for packet in packets:
        while pending and pending[0][0] <= packet.wall_ts:
            assert recorder.wait_idle(30)
            for order in pending.pop(0)[1]:
                order(recorder)
        recorder.packet(packet)
    recorder.stream_closed("end of file")
    recorder.stop(timeout_s=60)
    return recorder


def _started(event_id, at):
    return lambda rec: rec.event_started(event_id, "cam1", at)


def _ended(event_id, at):
    return lambda rec: rec.event_ended(event_id, at)


@pytest.mark.parametrize("late_s", [0.5, 1.5, 3.0, DEFAULT_LATE_S - GOP_S])
def test_an_event_that_reaches_the_recorder_late_still_gets_its_whole_pre_roll(tmp_path, stream, late_s):
    """An event starts at the first frame its object was seen; the recorder hears of it after
    min_frames analysed frames and the detector's latency, seconds later on a loaded device."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    pre_s, start, end = 2.0, BASE_WALL + 4.0, BASE_WALL + 9.0
    recorder = record_in_step(store, settings(pre_s=pre_s, post_s=1.0), info, packets,
                              {start + late_s: [_started("ev1", start)], end: [_ended("ev1", end)]})
    clip = store.clip("ev1")
    assert clip is not None and clip.complete and ffprobe(store.resolve(clip.path)).errors == ""
    assert start - pre_s - GOP_S - 1e-6 <= clip.start <= start - pre_s + 1e-6, clip.start - (start - pre_s)
    assert recorder.status().clips_preroll_short == 0


def test_an_event_later_than_the_pre_roll_held_is_counted_short(tmp_path, stream):
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    pre_s, start = 1.0, BASE_WALL + 2.0
    told = start + DEFAULT_LATE_S + 2 * GOP_S
    recorder = record_in_step(store, settings(pre_s=pre_s, post_s=0.5), info, packets,
                              {told: [_started("ev1", start), _ended("ev1", told)]})
    clip = store.clip("ev1")
    assert clip is not None and clip.start > start - pre_s  # what it could still get
    assert recorder.status().clips_preroll_short == 1


def test_a_full_queue_drops_the_rest_of_the_gop_never_a_frame_in_its_middle(tmp_path, stream):
    """The frames after a dropped one refer to it: the queue takes packets again at a keyframe."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    room = GOP_FRAMES + GOP_FRAMES // 2
    recorder = CameraRecorder(store, settings(events=False, continuous=True), queue_packets=room)  # not started
    recorder.stream_opened(info)
    for packet in packets[:room + 5]:  # the first GOP and half the second fit; five more do not
        recorder.packet(packet)
    recorder.start()
    try:
        for packet in packets[room + 5:]:
            assert recorder.wait_idle(10)  # room again from here on: only the GOP's tail is refused
            recorder.packet(packet)
    finally:
        recorder.stop(timeout_s=60)
    dropped = 2 * GOP_FRAMES - room  # from the first packet that did not fit to the next keyframe
    assert recorder.status().packets_dropped == dropped
    segments = store.segments("cam1", BASE_WALL - 1, BASE_WALL + 100)
    assert sum(ffprobe(store.resolve(s.path)).frames for s in segments) == len(packets) - dropped
    assert all(ffprobe(store.resolve(s.path)).errors == "" for s in segments)


def test_the_inbox_refuses_a_gops_tail_once_a_packet_of_it_was_dropped():
    inbox = Inbox(max_items=2)
    assert inbox.offer(("packet", 0), 1, keyframe=True) and inbox.offer(("packet", 1), 1, keyframe=False)
    assert not inbox.offer(("packet", 2), 1, keyframe=False)  # full
    inbox.take(0), inbox.done(1)
    assert not inbox.offer(("packet", 3), 1, keyframe=False)  # room, but it refers to packet 2
    assert inbox.offer(("packet", 4), 1, keyframe=True)       # a keyframe starts over
    assert inbox.dropped == 2


def test_a_full_queue_never_costs_a_clip_its_pre_roll(tmp_path, stream):
    """The recorder thread stalls (here: not started yet) while the camera sends on: the queue
    fills after a second and drops the next five, the very seconds an event's pre-roll needs."""
    info, packets = stream
    store = RecordingStore(tmp_path / "rec")
    pre_s, start, end, post_s = 2.0, BASE_WALL + 5.0, BASE_WALL + 8.0, 1.0
    recorder = CameraRecorder(store, settings(pre_s=pre_s, post_s=post_s), queue_packets=GOP_FRAMES)
    recorder.stream_opened(info)
    stalled = [p for p in packets if p.wall_ts < start + 1.0]
    for packet in stalled:
        recorder.packet(packet)
    recorder.event_started("ev1", "cam1", start)
    recorder.start()
    ended = False
    try:
        for packet in packets[len(stalled):]:
            assert recorder.wait_idle(10)
            if packet.wall_ts >= end and not ended:
                recorder.event_ended("ev1", end)
                ended = True
            recorder.packet(packet)
    finally:
        recorder.stop(timeout_s=60)
    assert recorder.status().packets_dropped == len(stalled) - GOP_FRAMES
    clip = store.clip("ev1")
    assert clip is not None and clip.complete
    assert start - pre_s - GOP_S - 1e-6 <= clip.start <= start - pre_s + 1e-6, clip.start - (start - pre_s)
    probe = ffprobe(store.resolve(clip.path))
    assert probe.errors == ""
    assert clip.start + (probe.last_s - probe.first_s) >= end + post_s - FRAME_S - 1e-6
    assert recorder.status().clips_preroll_short == 0
