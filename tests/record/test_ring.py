"""The pre-roll ring holds pre_s and the lateness allowed to events plus at most one GOP, in whole
GOPs, and stays within its bytes."""
from __future__ import annotations

import pytest

from edge_app.record.ring import PreRollRing
from tests.record.media import GOP_S, shifted


def keep_up(ring: PreRollRing, info, packet) -> None:
    """Add ``packet`` as the capture thread does, its recorder keeping pace with the camera (it
    has handled every packet before this one: the ring then trims behind the camera)."""
    ring.reached(packet.wall_ts)
    ring.add(info, packet)


@pytest.mark.parametrize("pre_s, late_s", [(0.0, 0.0), (0.5, 0.0), (1.0, 2.0), (2.5, 1.5), (5.0, 0.0), (0.0, 5.0)])
def test_ring_holds_pre_s_and_late_s_plus_at_most_one_gop(stream, pre_s, late_s):
    info, packets = stream
    ring = PreRollRing(pre_s, late_s=late_s)
    newest = float("-inf")
    for packet in packets:
        keep_up(ring, info, packet)
        newest = max(newest, packet.wall_ts)  # B-frames arrive after the later frame they refer to
        held = list(ring.since(float("-inf")))
        assert held[0][1].keyframe
        span = newest - held[0][1].wall_ts
        reached = newest - packets[0].wall_ts
        assert span >= min(pre_s + late_s, reached) - 1e-6  # it reaches back that far (once the stream is that old)
        assert span <= pre_s + late_s + GOP_S + 1e-6  # and no more than one GOP further
        assert ring.reaches(newest - pre_s - late_s)  # what an event that late needs is all there


@pytest.mark.parametrize("offset_s, expected_start_s", [(4.5, 4.0), (4.0, 4.0), (3.99, 3.0), (-100.0, 3.0)])
def test_since_starts_at_the_last_keyframe_at_or_before(stream, offset_s, expected_start_s):
    info, packets = stream
    ring = PreRollRing(2.0, late_s=0.0)
    base = packets[0].wall_ts
    for packet in packets[:int(5.5 * 30)]:
        keep_up(ring, info, packet)
    first = next(iter(ring.since(base + offset_s)))[1]
    assert first.keyframe and first.wall_ts - base == pytest.approx(expected_start_s, abs=1e-6)


def test_ring_bytes_are_bounded_in_whole_gops(stream):
    info, packets = stream
    gop_bytes = max(sum(len(p.data) for p in packets[i:i + 30]) for i in range(0, len(packets), 30))
    ring = PreRollRing(60.0, max_bytes=2 * gop_bytes)
    for packet in packets:
        keep_up(ring, info, packet)
        assert ring.bytes <= 3 * gop_bytes  # the limit plus the GOP being received
        assert next(iter(ring.since(float("-inf"))))[1].keyframe
    assert ring.dropped_for_bytes > 0


def test_packets_before_a_connections_first_keyframe_are_not_kept(stream):
    info, packets = stream
    ring = PreRollRing(5.0)
    for packet in packets[5:40]:  # joins mid-GOP: nothing until the keyframe at frame 30
        keep_up(ring, info, packet)
    assert [p.keyframe for _, p in ring.since(float("-inf"))][:1] == [True]
    assert len(ring) == 10
    other = info.__class__(**info.__dict__)  # a reconnect: its packets wait for its own keyframe
    for packet in shifted(packets[3:10], 0, 2.0):
        keep_up(ring, other, packet)
    assert len(ring) == 10


def test_a_gop_longer_than_the_byte_bound_is_not_held(stream):
    """A camera whose keyframes stop (or a 60 s GOP of 4K) must not grow the ring past its bound:
    the GOP is dropped once it alone exceeds it, and the ring waits for the next keyframe."""
    info, packets = stream
    one_gop = [packets[0]] + [p for p in packets[1:] if not p.keyframe]  # keyframes stop after the first
    budget = sum(len(p.data) for p in one_gop[:40])
    ring = PreRollRing(60.0, max_bytes=budget)
    for packet in one_gop:
        keep_up(ring, info, packet)
        assert ring.bytes <= budget
    assert len(ring) == 0 and ring.dropped_for_bytes == 1
    keep_up(ring, info, packets[30])  # the next keyframe: held again
    assert len(ring) == 1 and next(iter(ring.since(float("-inf"))))[1].keyframe


def test_the_ring_knows_when_it_no_longer_holds_what_a_late_event_needs(stream):
    info, packets = stream
    ring = PreRollRing(2.0, late_s=1.0)
    base = packets[0].wall_ts
    for packet in packets[:int(8.5 * 30)]:
        keep_up(ring, info, packet)
    assert ring.reaches(base + 8.5 - 3.0)             # pre_s + late_s back: held
    assert not ring.reaches(base + 8.5 - 5.0)         # an event 3 s late: its pre-roll's first GOPs are gone
    assert PreRollRing(2.0).reaches(float("-inf"))   # an empty ring lost nothing
    ring.clear()
    assert ring.reaches(float("-inf"))


def test_a_ring_that_follows_its_reader_keeps_the_pre_roll_behind_the_reader_not_the_camera(stream):
    """The recorder thread runs 6 s behind the camera: the GOPs it will still need stay."""
    info, packets = stream
    ring = PreRollRing(1.0, late_s=1.0)
    base = packets[0].wall_ts
    for packet in packets[:int(10 * 30)]:
        ring.add(info, packet)
    assert ring.since(float("-inf"))[0][1].wall_ts == base  # the reader has handled nothing yet
    ring.reached(base + 4.0)
    ring.add(info, packets[300])
    assert ring.since(float("-inf"))[0][1].wall_ts == pytest.approx(base + 2.0)  # 4 - pre_s - late_s
    assert ring.reaches(base + 2.0) and not ring.reaches(base + 1.5)
    alone = PreRollRing(1.0, late_s=1.0)
    for packet in packets[:301]:
        keep_up(alone, info, packet)
    assert alone.since(float("-inf"))[0][1].wall_ts == pytest.approx(base + 8.0)  # a reader keeping pace: behind the camera


def test_since_stops_at_the_packet_the_reader_has_reached(stream):
    info, packets = stream
    ring = PreRollRing(2.0)
    for packet in packets[:90]:
        ring.add(info, packet)
    assert [p for _, p in ring.since(packets[30].wall_ts, upto=packets[40])] == packets[30:41]
    assert ring.since(packets[30].wall_ts, upto=packets[200]) == []  # not held: the queue brings it
