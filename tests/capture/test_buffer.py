import threading
import time

import numpy as np
import pytest

from edge_app.capture.buffer import DEFAULT_FILE_FPS, BufferPolicy, FrameSlot, Pacer, file_fps, policy_for
from edge_app.capture.frame import Frame


def frame(frame_id: int) -> Frame:
    return Frame("cam", frame_id, 1000.0 + frame_id, float(frame_id), np.zeros((2, 2, 3), np.uint8))


@pytest.mark.parametrize(
    "live,realtime,policy",
    [(True, True, BufferPolicy.DROP_OLDEST), (True, False, BufferPolicy.DROP_OLDEST),
     (False, True, BufferPolicy.DROP_OLDEST), (False, False, BufferPolicy.WAIT)],
)
def test_policy_for(live, realtime, policy):
    assert policy_for(live, realtime) is policy


def test_drop_oldest_keeps_newest_and_counts_drops():
    slot = FrameSlot(BufferPolicy.DROP_OLDEST)
    assert slot.take() is None
    for i in range(1, 6):
        assert slot.put(frame(i))
    assert slot.dropped == 4
    assert slot.peek().frame_id == 5
    assert slot.take().frame_id == 5
    assert slot.take() is None
    assert slot.peek().frame_id == 5  # snapshots still see the last frame
    slot.put(frame(6))
    assert slot.dropped == 4  # the slot was empty: nothing lost


def test_wait_loses_no_frame_with_a_slow_consumer():
    slot = FrameSlot(BufferPolicy.WAIT)
    count = 50

    def produce():
        for i in range(1, count + 1):
            assert slot.put(frame(i))

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    taken = []
    deadline = time.monotonic() + 10
    while len(taken) < count and time.monotonic() < deadline:
        item = slot.take()
        if item is None:
            time.sleep(0.001)
            continue
        taken.append(item.frame_id)
        if len(taken) % 10 == 0:
            time.sleep(0.02)  # a slow consumer moment: the producer must wait, not drop
    producer.join(2)
    assert taken == list(range(1, count + 1))
    assert slot.dropped == 0


def test_wait_put_is_interrupted_by_close():
    slot = FrameSlot(BufferPolicy.WAIT, read_ahead=1)
    slot.put(frame(1))
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("put", slot.put(frame(2))), daemon=True)
    thread.start()
    time.sleep(0.1)
    assert thread.is_alive()  # waiting for the consumer
    slot.close()
    thread.join(1)
    assert not thread.is_alive() and result["put"] is False
    assert slot.take().frame_id == 1  # what was in stays takeable
    assert slot.wait_drained(0) is True


def test_pacer_releases_frames_at_the_rate():
    now = [0.0]
    sleeps = []

    def sleep(seconds):
        sleeps.append(round(seconds, 6))
        now[0] += seconds
        return False

    pacer = Pacer(10, lambda: now[0], sleep)
    for _ in range(4):
        assert pacer.wait_turn()
    assert sleeps == [0.1, 0.1, 0.1]
    now[0] += 5.0  # fell far behind: no burst of catch-up frames, the schedule restarts
    sleeps.clear()
    assert pacer.wait_turn() and pacer.wait_turn()
    assert sleeps == [0.1]


def test_pacer_stops_when_sleep_is_interrupted():
    now = [0.0]
    pacer = Pacer(10, lambda: now[0], lambda seconds: True)
    assert pacer.wait_turn()  # the first frame is due at once
    assert pacer.wait_turn() is False


@pytest.mark.parametrize("reported,expected", [(10.0, 10.0), (29.97, 29.97), (0.0, DEFAULT_FILE_FPS),
                                              (-1.0, DEFAULT_FILE_FPS), (float("nan"), DEFAULT_FILE_FPS), (90000.0, DEFAULT_FILE_FPS)])
def test_file_fps(reported, expected):
    assert file_fps(reported) == expected


def test_wait_newer_returns_the_next_frame_or_none_on_timeout():
    slot = FrameSlot(BufferPolicy.DROP_OLDEST)
    assert slot.wait_newer(-1, 0.05) is None
    first = Frame("c", 1, 0.0, 0.0, np.zeros((2, 2, 3), np.uint8))
    slot.put(first)
    assert slot.wait_newer(-1, 0.05) is first
    assert slot.wait_newer(1, 0.05) is None
    threading.Timer(0.05, slot.put, args=(Frame("c", 2, 0.0, 0.0, np.zeros((2, 2, 3), np.uint8)),)).start()
    assert slot.wait_newer(1, 2.0).frame_id == 2


@pytest.mark.parametrize("read_ahead", [1, 4])
def test_wait_reads_ahead_then_waits_and_hands_frames_out_oldest_first(read_ahead):
    slot = FrameSlot(BufferPolicy.WAIT, read_ahead=read_ahead)
    for i in range(1, read_ahead + 1):
        assert slot.put(frame(i))  # room: no wait
    blocked = threading.Thread(target=slot.put, args=(frame(read_ahead + 1),), daemon=True)
    blocked.start()
    time.sleep(0.1)
    assert blocked.is_alive()  # full: the producer waits instead of dropping
    assert slot.take().frame_id == 1
    blocked.join(1)
    assert not blocked.is_alive()
    assert [slot.take().frame_id for _ in range(read_ahead)] == list(range(2, read_ahead + 2))
    assert slot.take() is None and slot.dropped == 0 and slot.peek().frame_id == read_ahead + 1
    assert slot.wait_drained(0) is True


def test_drop_oldest_holds_one_frame_whatever_the_read_ahead():
    slot = FrameSlot(BufferPolicy.DROP_OLDEST, read_ahead=4)
    for i in range(1, 4):
        slot.put(frame(i))
    assert slot.take().frame_id == 3 and slot.take() is None and slot.dropped == 2
