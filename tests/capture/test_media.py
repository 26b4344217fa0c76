"""The clip fixtures other tests rely on are what their docstrings promise."""
from tests.support.media import clip_info, make_clip


def test_clip_fixtures(bus_clip, zidane_clip, mixed_clip):
    assert clip_info(bus_clip) == {"width": 810, "height": 1080, "fps": 10.0, "frames": 20}
    assert clip_info(zidane_clip) == {"width": 1280, "height": 720, "fps": 10.0, "frames": 20}
    assert clip_info(mixed_clip) == {"width": 1280, "height": 720, "fps": 10.0, "frames": 40}


def test_make_clip_forces_an_even_size(tmp_path, bus_jpg):
    clip = make_clip([bus_jpg], tmp_path / "odd.mp4", seconds_per_image=0.5, fps=4, size=(101, 77))
    assert clip_info(clip) == {"width": 100, "height": 76, "fps": 4.0, "frames": 2}
