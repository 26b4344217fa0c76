"""The per-stage time accumulator behind ``edge_app_stage_seconds``."""
import pytest

from edge_app.reporting.stage_times import STAGES, StageTimes, StageTotal


def test_sums_per_camera_and_stage_in_frame_order():
    times = StageTimes()
    times.add("b", "mqtt", 0.002)
    times.add("a", "tracking", 0.001)
    times.add("a", "tracking", 0.003)
    times.add("a", "mqtt", 0.003)
    times.add("a", "mqtt", 0.001, frames=0)  # more time for a frame already counted
    times.add("a", "capture", 0.010)
    assert times.totals() == [StageTotal("a", "capture", 0.010, 1), StageTotal("a", "tracking", 0.004, 2),
                              StageTotal("a", "mqtt", 0.004, 1), StageTotal("b", "mqtt", 0.002, 1)]
    assert times.mean_ms() == {"capture": 10.0, "tracking": 2.0, "mqtt": 3.0}


def test_an_unknown_stage_is_refused_instead_of_making_a_new_series():
    with pytest.raises(KeyError):
        StageTimes().add("a", "trackign", 0.001)


def test_the_stages_are_those_the_docs_list():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    assert [stage for stage in STAGES if f"| `{stage}` |" not in page] == []
