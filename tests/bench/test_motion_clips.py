"""The motion benchmark's clips are the same whether the ffmpeg program or PyAV encodes them."""
import cv2
import numpy as np
import pytest

from bench.cpu import motion_clips


@pytest.mark.parametrize("ffmpeg_program", [True, False], ids=["ffmpeg", "pyav"])
def test_clips_decode_to_the_frames_asked_for(ffmpeg_program, monkeypatch, tmp_path, images_dir):
    monkeypatch.setattr(motion_clips, "BUS_JPG", images_dir / "bus.jpg")
    if not ffmpeg_program:  # a machine without the ffmpeg program (the GPU test machine has none)
        monkeypatch.setattr(motion_clips.shutil, "which", lambda name: None)
    static, walking = motion_clips.make_clips(tmp_path, (320, 180), 10, seconds=1.0)
    for clip in (static, walking):
        capture = cv2.VideoCapture(str(clip))
        frames = []
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(frame)
        capture.release()
        assert len(frames) == 10 and frames[0].shape == (180, 320, 3)
    assert not list(tmp_path.glob("*.part"))
    # the walking clip differs from the static one where the people are
    first_static, first_walking = (cv2.VideoCapture(str(c)).read()[1] for c in (static, walking))
    assert np.abs(first_static.astype(int) - first_walking.astype(int)).mean() > 5
