"""The budget of ``test://`` cameras: frames held against the device's memory, pixels drawn per second."""
import pytest

from edge_app.config.file import merge_patch, parse_config
from edge_app.config.synthetic_budget import FRAMES_HELD, MAX_PIXELS_PER_S, synthetic_problems

GB = 1_000_000_000


def config(*sources, enabled=True):
    cameras = [{"id": f"c{i}", "source": source, "enabled": enabled} for i, source in enumerate(sources)]
    return parse_config(merge_patch({"model": {"path": "m.onnx"}}, {"cameras": cameras}))


def test_everyday_synthetic_cameras_fit_a_small_device():
    assert synthetic_problems(config(*["test://bars"] * 8, "test://box?width=1920&height=1080&fps=30"), 4 * GB) == []


def test_the_frames_they_hold_count_against_a_quarter_of_the_memory():
    big = "test://noise?width=4096&height=4096&fps=1"  # 48 MiB a frame, 201 MB held
    per_camera = 4096 * 4096 * 3 * FRAMES_HELD
    fits = int(GB / per_camera)  # a quarter of 4 GB
    assert synthetic_problems(config(*[big] * fits), 4 * GB) == []
    problems = synthetic_problems(config(*[big] * (fits + 1)), 4 * GB)
    assert [p.loc for p in problems] == [f"cameras.{fits}.source"]
    assert "MB of frames" in problems[0].msg and "4.0 GB" in problems[0].msg


def test_the_pixels_they_draw_per_second_are_bounded():
    problems = synthetic_problems(config("test://noise?width=8192&height=8192&fps=1000"), 1000 * GB)
    assert [p.loc for p in problems] == ["cameras.0.source"]
    assert f"{MAX_PIXELS_PER_S / 1e6:.0f} allowed" in problems[0].msg


def test_disabled_and_real_cameras_cost_nothing_here():
    assert synthetic_problems(config(*["test://noise?width=8192&height=8192&fps=1000"] * 3, enabled=False), GB) == []
    assert synthetic_problems(config("rtsp://10.0.0.5/s", "/media/a.mp4"), GB) == []


@pytest.mark.parametrize("memory", [None, 0])
def test_without_a_known_memory_size_only_the_pixel_rate_counts(memory):
    assert synthetic_problems(config(*["test://black?width=8192&height=8192&fps=1"] * 7), memory) == []
    assert synthetic_problems(config(*["test://black?width=8192&height=8192&fps=1"] * 8), memory) != []
