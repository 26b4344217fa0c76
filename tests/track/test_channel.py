"""ChildChannel against multiprocessing's own Connection on the other end of a real duplex Pipe."""
import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

from edge_app.track.channel import ChannelTimeout, ChildChannel


@pytest.fixture
def ends():
    parent, child = multiprocessing.get_context("spawn").Pipe()
    channel = ChildChannel(parent)
    yield channel, child
    channel.close()
    child.close()


@pytest.mark.parametrize("answer", [
    ("ok", None),
    ("ok", (b"\x01" * 8, (3, 4), 2, (1, 2), 5)),
    ("ok", np.arange(40_000, dtype=np.int64).tobytes()),  # 320 kB: read in several parts
    ("error", "ValueError: timestamps must not go back"),
])
def test_what_the_child_sends_with_connection_is_what_the_channel_reads(ends, answer):
    channel, child = ends
    channel.send(("update", "cam#1", b"\x00" * 48, 12.5))
    assert child.recv() == ("update", "cam#1", b"\x00" * 48, 12.5)  # the child reads it with Connection
    sender = threading.Thread(target=child.send, args=(answer,))  # a long one fills the socket's buffer
    sender.start()
    assert channel.receive(5.0) == answer
    sender.join(5)


def test_answers_come_in_order_also_when_they_arrive_together(ends):
    channel, child = ends
    for n in range(3):
        child.send(("ok", n))
    assert [channel.receive(1.0) for _ in range(3)] == [("ok", 0), ("ok", 1), ("ok", 2)]


@pytest.mark.parametrize("timeout_s", [0.05, 0.3])
def test_no_answer_is_a_timeout_after_about_the_time_given(ends, timeout_s):
    channel, _ = ends
    started = time.monotonic()
    with pytest.raises(ChannelTimeout):
        channel.receive(timeout_s)
    assert timeout_s * 0.9 <= time.monotonic() - started < timeout_s + 0.5


def test_an_answer_that_stops_half_way_times_out_at_the_deadline(ends):
    channel, child = ends
    child.send(("ok", 1))
    os.write(child.fileno(), b"\x00\x00\x00\x10abc")  # then a frame of 16 bytes that never ends
    assert channel.receive(1.0) == ("ok", 1)
    started = time.monotonic()
    with pytest.raises(ChannelTimeout):
        channel.receive(0.2)
    assert time.monotonic() - started < 1.0


def test_the_child_closing_its_end_is_an_end_of_file(ends):
    channel, child = ends
    child.close()
    with pytest.raises(EOFError):
        channel.receive(5.0)


def test_a_slow_answer_within_the_time_is_read(ends):
    channel, child = ends
    threading.Timer(0.1, lambda: child.send(("ok", "late"))).start()
    assert channel.receive(2.0) == ("ok", "late")
