import numpy as np
import pytest

from edge_app.detect.letterbox import (
    PAD_VALUE,
    Letterboxer,
    boxes_to_source,
    letterbox,
    letterbox_meta,
    model_to_source,
    resized_wh,
    source_to_model,
)

# (height, width) of awkward sources: odd, tiny, very thin, portrait, landscape, large
SIZES_HW = [(479, 641), (641, 479), (1, 1), (1, 1000), (1000, 1), (3, 5), (1080, 810), (720, 1280),
            (640, 640), (97, 100), (3000, 4000)]


@pytest.mark.parametrize(
    "src_hw, dst_hw, resized, pad_xy",
    [
        ((1080, 810), (640, 640), (480, 640), (80, 0)),
        ((720, 1280), (640, 640), (640, 360), (0, 140)),
        ((479, 641), (640, 640), (640, 478), (0, 81)),
        ((100, 97), (640, 640), (621, 640), (9, 0)),  # 19 px of padding: 9 left, 10 right
        ((1, 1), (640, 640), (640, 640), (0, 0)),
        ((1, 1000), (640, 640), (640, 1), (0, 319)),
        ((640, 640), (640, 640), (640, 640), (0, 0)),
        ((720, 1280), (480, 640), (640, 360), (0, 60)),  # non-square model input
    ],
)
def test_geometry(src_hw, dst_hw, resized, pad_xy):
    meta = letterbox_meta(src_hw, dst_hw)
    assert resized_wh(meta.src_hw, meta.scale) == resized
    assert meta.pad_xy == pad_xy
    assert meta.src_hw == src_hw


@pytest.mark.parametrize("src_hw", SIZES_HW)
def test_points_round_trip(src_hw):
    meta = letterbox_meta(src_hw, (640, 640))
    rng = np.random.default_rng(1)
    points = rng.uniform(0, 1, (50, 2)) * [src_hw[1], src_hw[0]]
    back = model_to_source(source_to_model(points, meta), meta)
    np.testing.assert_allclose(back, points, atol=1e-6)


@pytest.mark.parametrize("src_hw", SIZES_HW)
def test_image_content_maps_back_to_its_source_pixels(src_hw):
    """Where a white block lands in the tensor, mapped back, is where it was in the frame."""
    height, width = src_hw
    x1, x2 = (width // 4, max(width // 4 + 1, 3 * width // 4)) if width >= 4 else (0, width)
    y1, y2 = (height // 4, max(height // 4 + 1, 3 * height // 4)) if height >= 4 else (0, height)
    frame = np.zeros((height, width, 3), np.uint8)
    frame[y1:y2, x1:x2] = 255
    tensor, meta = letterbox(frame, (640, 640))
    bright = tensor[0, 0] > 0.75  # grey padding is 0.45, black 0, white 1
    rows, cols = np.flatnonzero(bright.any(axis=1)), np.flatnonzero(bright.any(axis=0))
    model_box = [cols[0], rows[0], cols[-1] + 1, rows[-1] + 1]  # pixel edges
    found = model_to_source(np.asarray([model_box], float), meta)[0]
    # Interpolation blurs an edge by at most one model pixel.
    tolerance = max(1.0, 1.0 / meta.scale)
    np.testing.assert_allclose(found, [x1, y1, x2, y2], atol=tolerance)


def test_tensor_is_rgb_float_in_unit_range_with_grey_padding():
    blue_bgr = np.zeros((1080, 810, 3), np.uint8)
    blue_bgr[..., 0] = 255
    batch = Letterboxer((640, 640), max_batch=2)([blue_bgr, blue_bgr])
    tensor = batch.tensor
    assert tensor.shape == (2, 3, 640, 640) and tensor.dtype == np.float32 and tensor.flags.c_contiguous
    assert 0.0 <= tensor.min() and tensor.max() <= 1.0
    content = tensor[:, :, :, 80:560]
    assert np.all(content[:, 2] == 1.0) and np.all(content[:, :2] == 0.0)  # blue is channel 2 (RGB)
    grey = np.float32(PAD_VALUE / 255)
    assert np.allclose(tensor[:, :, :, :80], grey) and np.allclose(tensor[:, :, :, 560:], grey)


def test_padding_is_repainted_when_a_slot_changes_size():
    boxer = Letterboxer((640, 640), max_batch=1, num_buffers=1)
    white = np.full((720, 1280, 3), 255, np.uint8)  # fills rows 140..500
    boxer([white])
    batch = boxer([np.full((1080, 810, 3), 255, np.uint8)])  # fills columns 80..560
    assert np.allclose(batch.tensor[0, :, :140, :80], PAD_VALUE / 255)
    assert np.allclose(batch.tensor[0, :, :, 80:560], 1.0)


def test_buffers_are_reused_in_turn():
    boxer = Letterboxer((64, 64), max_batch=2, num_buffers=3)
    frames = [np.full((48, 64, 3), v, np.uint8) for v in (10, 20, 30, 40)]
    first = boxer([frames[0]]).tensor
    second = boxer([frames[1], frames[2]]).tensor
    third = boxer([frames[3]]).tensor
    assert first[0, 0, 32, 32] == pytest.approx(10 / 255)  # still intact two calls later
    assert not np.shares_memory(first, second) and not np.shares_memory(first, third)
    fourth = boxer([frames[3]]).tensor
    assert np.shares_memory(first, fourth)


@pytest.mark.parametrize(
    "frame",
    [np.full((30, 40), 200, np.uint8), np.full((30, 40, 1), 200, np.uint8), np.full((30, 40, 4), 200, np.uint8)],
)
def test_grey_and_bgra_frames_are_accepted(frame):
    tensor, _ = letterbox(frame, (64, 64))
    assert np.allclose(tensor[0, :, 32, 32], 200 / 255)


@pytest.mark.parametrize("frame", [np.zeros((30, 40, 3), np.float32), np.zeros((30, 40, 2), np.uint8), np.zeros((0, 4, 3), np.uint8)])
def test_bad_frames_are_rejected(frame):
    with pytest.raises(ValueError):
        letterbox(frame, (64, 64))


def test_batch_larger_than_max_batch_is_rejected():
    frame = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError):
        Letterboxer((64, 64), max_batch=1)([frame, frame])


def test_boxes_are_clipped_to_the_frame():
    meta = letterbox_meta((1080, 810), (640, 640))
    boxes = boxes_to_source(np.asarray([[0, -5, 700, 645]], np.float32), meta)
    np.testing.assert_allclose(boxes, [[0, 0, 810, 1080]])
    assert boxes.dtype == np.float32
