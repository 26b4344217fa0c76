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
