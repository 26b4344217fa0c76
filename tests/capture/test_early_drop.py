"""Frames dropped before conversion: fps_limit, and an idle motion gate, with the time passed in."""
import pytest

from edge_app.capture.early_drop import IDLE_CHECKS_PER_S, EarlyDrop


def _kept(drop, fps, seconds, idle=False, jitter_s=0.0):
    times = [k / fps + (jitter_s if k % 2 else -jitter_s) for k in range(int(fps * seconds))]
    return [t for t in times if drop.keep(t, idle)]


@pytest.mark.parametrize("fps_limit, camera_fps, expected_per_s", [(0, 30, 30), (5, 30, 5), (10, 30, 10),
                                                                   (15, 30, 15), (7, 25, 7), (60, 30, 30)])
def test_fps_limit(fps_limit, camera_fps, expected_per_s):
    kept = _kept(EarlyDrop(fps_limit), camera_fps, 10, jitter_s=0.004)
    assert len(kept) / 10 == pytest.approx(expected_per_s, rel=0.05)


def test_an_idle_gate_is_looked_at_a_few_times_a_second_and_a_busy_one_every_frame():
    assert len(_kept(EarlyDrop(0), 30, 10, idle=True)) / 10 == pytest.approx(IDLE_CHECKS_PER_S, rel=0.05)
    assert len(_kept(EarlyDrop(0), 30, 10, idle=False)) == 300
    assert len(_kept(EarlyDrop(2), 30, 10, idle=True)) in (20, 21)  # the lower rate wins


def test_the_first_frame_is_kept():
    assert EarlyDrop(1).keep(100.0, idle=True)


def test_a_source_that_drops_before_copying_is_told_the_interval_and_nothing_is_dropped_here():
    from edge_app.capture.frame_gate import FrameGate

    class Paced:
        def __init__(self):
            self.intervals = []

        def pace(self, interval_s):
            self.intervals.append(interval_s)

    gate = FrameGate("cam", EarlyDrop(10))
    source = Paced()
    assert [gate.skips_from(source, k / 30) for k in range(6)] == [False] * 6
    assert source.intervals == [pytest.approx(0.1)] * 6
    gate.newest_held_back = True  # the motion gate went idle: the slower of the two schedules
    gate.skips_from(source, 1.0)
    assert source.intervals[-1] == pytest.approx(max(0.1, 1 / IDLE_CHECKS_PER_S))
    # a source without pace keeps the camera's own early drop: two of three frames at 30 fps and 10 fps_limit
    plain = FrameGate("cam", EarlyDrop(10))
    assert [plain.skips_from(object(), k / 30) for k in range(6)] == [False, True, True, False, True, True]
    no_drop = FrameGate("cam", None)  # files read with realtime: false drop nothing, and pace nothing
    assert not no_drop.skips_from(source, 2.0) and len(source.intervals) == 7


class _Decoder:
    """Pictures 0..n-1; ``read`` copies one out, ``grab`` only decodes it."""

    def __init__(self, n, fps=30.0, live=False):
        self.n, self.fps, self.live, self.next, self.copied = n, fps, live, 0, []

    def grab(self):
        self.next += 1
        return self.next <= self.n

    def read(self):
        if not self.grab():
            return None
        self.copied.append(self.next - 1)
        return self.next - 1


def test_pace_copies_out_only_the_pictures_on_the_schedule_of_a_file():
    from edge_app.capture.video_decode.pace import Pace

    decoder, pace = _Decoder(90), Pace(0.1)
    kept = []
    while (picture := pace.next_kept(decoder)) is not None:
        kept.append(picture)
    assert kept == decoder.copied == list(range(0, 90, 3))  # stream time: one in three of 30 fps
    assert pace.skipped == 60
    again = pace.new_pass()
    assert again.skipped == 0 and again.interval_s == 0.1
    faster, five = again.with_interval(0), _Decoder(5)
    assert [faster.next_kept(five) for _ in range(6)] == [0, 1, 2, 3, 4, None] and faster.skipped == 0


def test_pace_of_a_stream_runs_on_arrival_time():
    from edge_app.capture.video_decode.pace import Pace

    now = [0.0]

    def clock():
        now[0] += 1 / 30  # a picture arrives every 1/30 s
        return now[0]

    decoder, pace = _Decoder(60, live=True), Pace(1 / IDLE_CHECKS_PER_S, clock)
    kept = [pace.next_kept(decoder) for _ in range(10)]
    assert kept == list(range(0, 60, 6)) and pace.skipped == 45  # five between each two kept
