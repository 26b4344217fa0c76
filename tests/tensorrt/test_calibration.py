"""INT8 calibration images: found, spread, letterboxed exactly as at run time, batched."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.letterbox import letterbox
from edge_app.detect.tensorrt.calibration import CalibrationBatches, calibration_files, calibration_fingerprint


@pytest.fixture
def calib_dir(tmp_path, bus_jpg, zidane_jpg):
    folder = tmp_path / "calib"
    (folder / "cam2").mkdir(parents=True)
    for i in range(3):
        shutil.copy(bus_jpg, folder / f"a{i}.jpg")
        shutil.copy(zidane_jpg, folder / "cam2" / f"b{i}.JPG")
    (folder / "notes.txt").write_text("not an image")
    return folder


def test_images_are_found_recursively_in_a_stable_order(calib_dir):
    files = calibration_files(calib_dir)
    assert [p.name for p in files] == ["a0.jpg", "a1.jpg", "a2.jpg", "b0.JPG", "b1.JPG", "b2.JPG"]


def test_a_large_folder_is_sampled_evenly(calib_dir):
    files = calibration_files(calib_dir, max_images=3)
    assert [p.name for p in files] == ["a0.jpg", "a2.jpg", "b1.JPG"]


def test_missing_or_empty_folders_are_clear_errors(tmp_path):
    with pytest.raises(DetectorError, match="not a directory"):
        calibration_files(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DetectorError, match="holds no images"):
        calibration_files(tmp_path / "empty")


def test_batches_are_letterboxed_exactly_like_the_runtime_path(calib_dir, bus_image, zidane_image):
    files = calibration_files(calib_dir)
    batches = CalibrationBatches(files, (640, 640), batch_size=4)
    produced = list(batches)
    assert len(batches) == 1 and len(produced) == 1  # 6 images -> one whole batch of 4
    batch = produced[0]
    assert batch.shape == (4, 3, 640, 640) and batch.dtype == np.float32
    expected_bus, _ = letterbox(bus_image, (640, 640))
    expected_zidane, _ = letterbox(zidane_image, (640, 640))
    np.testing.assert_array_equal(batch[0], expected_bus[0])
    np.testing.assert_array_equal(batch[3], expected_zidane[0])
    assert 0.0 <= batch.min() and batch.max() <= 1.0


def test_batch_size_never_exceeds_the_images(calib_dir):
    files = calibration_files(calib_dir)[:2]
    batches = CalibrationBatches(files, (320, 320), batch_size=8)
    assert batches.batch_size == 2
    assert [b.shape for b in batches] == [(2, 3, 320, 320)]


def test_unreadable_images_are_skipped(calib_dir):
    (calib_dir / "a1.jpg").write_bytes(b"broken")
    batches = CalibrationBatches(calibration_files(calib_dir), (320, 320), batch_size=5)
    assert [b.shape[0] for b in batches] == [5]


def test_fingerprint_changes_with_model_size_and_images(calib_dir):
    files = calibration_files(calib_dir)
    base = calibration_fingerprint("a" * 64, (640, 640), files)
    assert base == calibration_fingerprint("a" * 64, (640, 640), list(files))
    assert base != calibration_fingerprint("b" * 64, (640, 640), files)
    assert base != calibration_fingerprint("a" * 64, (320, 320), files)
    assert base != calibration_fingerprint("a" * 64, (640, 640), files[:-1])
