"""The gate, with time passed in: motion, tracked objects, keepalive."""
import pytest

from edge_app.motion.gate import HOLD_S, MotionGate


def _run(gate, frames):
    """frames: (now_s, moving, has_objects) -> the decisions."""
    return [gate.decide(now_s, moving, objects) for now_s, moving, objects in frames]


def test_a_static_camera_is_analysed_on_keepalive_only():
    gate = MotionGate(keepalive_s=5.0)
    decisions = _run(gate, [(k / 10, False, False) for k in range(201)])  # 20 s at 10 fps
    analysed = [k / 10 for k, d in enumerate(decisions) if d.analyse]
    assert analysed == [0.0, 5.0, 10.0, 15.0, 20.0]
    assert {d.reason for d in decisions if d.analyse} == {"keepalive"}
    assert not any(d.motion for d in decisions)


def test_motion_is_analysed_at_once_and_held_briefly():
    gate = MotionGate(keepalive_s=5.0)
    frames = [(k / 10, 20 <= k < 40, False) for k in range(80)]
    decisions = _run(gate, frames)
    assert decisions[20].analyse and decisions[20].reason == "motion" and decisions[20].motion_changed
    assert all(d.analyse for d in decisions[20:40])
    held = [k for k in range(40, 80) if decisions[k].motion]
    assert held and max(held) / 10 - 3.9 <= HOLD_S + 1e-9
    off = next(k for k in range(40, 80) if not decisions[k].motion)
    assert decisions[off].motion_changed and not decisions[off].analyse


def test_tracked_objects_keep_the_camera_analysed_without_motion():
    gate = MotionGate(keepalive_s=5.0)
    decisions = _run(gate, [(k / 10, False, 10 <= k < 30) for k in range(40)])
    assert all(d.analyse and d.reason == "objects" for d in decisions[10:30])
    assert not any(d.analyse for d in decisions[30:40])


@pytest.mark.parametrize("keepalive_s", [0.1, 1.0, 2.5])
def test_keepalive_counts_from_the_last_analysed_frame(keepalive_s):
    gate = MotionGate(keepalive_s=keepalive_s)
    decisions = _run(gate, [(k / 100, k == 50, False) for k in range(1000)])
    times = [k / 100 for k, d in enumerate(decisions) if d.analyse]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= keepalive_s + 0.011
