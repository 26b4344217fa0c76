"""The motion-gating bench's CPU accounting (``bench/cpu/motion_gating.py``)."""
import pytest

from bench.cpu.motion_gating import _by_name


@pytest.mark.parametrize("now, since, names, expected", [
    ({1: 2.0, 2: 1.5}, {1: 0.5}, {1: "capture:a", 2: "capture:b"}, {"capture:a": 1.5, "capture:b": 1.5}),
    ({1: 2.0, 2: 1.0}, {1: 1.0, 2: 0.5}, {1: "decode:x", 2: "decode:x"}, {"decode:x": 1.5}),  # same name: summed
    ({1: 2.0, 3: 4.0}, {1: 1.0}, {1: "pipeline:lane0"}, {"pipeline:lane0": 1.0}),  # unnamed (native): left out
    ({1: 1.0}, {1: 3.0}, {1: "decode:x"}, {"decode:x": 0.0}),  # a pid reused by a new child: never below 0
])
def test_cpu_between_two_readings_is_summed_by_name(now, since, names, expected):
    assert _by_name(now, since, names) == expected
