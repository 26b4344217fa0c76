"""Privacy masks drawn for a frame size and applied to BGR frames: black inside, untouched outside."""
import threading

import numpy as np
import pytest

from edge_app.capture.gpu_image import HostNv12Image, bgr_image
from edge_app.privacy.feed import MaskedFeed, detector_feed
from edge_app.privacy.images import MaskedImage, masked
from edge_app.privacy.masks import MaskBook, MaskShape, PrivacyMasks

SQUARE = ((0.25, 0.25), (0.75, 0.25), (0.75, 0.75), (0.25, 0.75))


def frame(height=120, width=160, seed=1):
    return np.random.default_rng(seed).integers(30, 255, (height, width, 3), dtype=np.uint8)


def square_parts(height=120, width=160):
    """(surely inside, surely outside) of SQUARE: a pixel's width of slack either side of its edges."""
    ys, xs = np.mgrid[0:height, 0:width]
    cy, cx = (ys + 0.5) / height, (xs + 0.5) / width  # pixel centres in frame fractions
    dy, dx = 1.5 / height, 1.5 / width
    inside = (cy > 0.25 + dy) & (cy < 0.75 - dy) & (cx > 0.25 + dx) & (cx < 0.75 - dx)
    near = (cy > 0.25 - 2 * dy) & (cy < 0.75 + 2 * dy) & (cx > 0.25 - 2 * dx) & (cx < 0.75 + 2 * dx)
    return inside, ~near


def inside_square(height=120, width=160):
    return square_parts(height, width)[0]


def test_black_mask_blacks_out_the_polygon_and_leaves_the_rest_alone():
    image = frame()
    out = PrivacyMasks([MaskShape(SQUARE)]).apply(image)
    inside, outside = square_parts()
    assert (out[inside] == 0).all()
    assert (out[outside] == image[outside]).all()
    assert image.max() > 0 and (image[inside] != 0).any()  # the source itself is not changed


@pytest.mark.parametrize("height, width", [(120, 160), (1080, 1920), (721, 1279)])
def test_the_mask_follows_the_frame_size(height, width):
    out = PrivacyMasks([MaskShape(SQUARE)]).apply(frame(height, width))
    assert (out[inside_square(height, width)] == 0).all()
    assert out[0, 0].any() and out[-1, -1].any()


def test_blur_changes_the_inside_and_not_the_outside():
    image = frame(240, 320)
    out = PrivacyMasks([MaskShape(SQUARE, "blur")]).apply(image)
    inside, outside = square_parts(240, 320)
    assert (out[outside] == image[outside]).all()
    # random noise blurred by a wide box is nearly flat: the detail is gone
    assert out[inside].astype(float).std() < image[inside].astype(float).std() / 4


def test_black_wins_where_a_black_and_a_blurred_mask_overlap():
    out = PrivacyMasks([MaskShape(SQUARE, "blur"), MaskShape(SQUARE, "black")]).apply(frame())
    assert (out[inside_square()] == 0).all()


def test_the_rendered_mask_is_drawn_once_per_size():
    masks = PrivacyMasks([MaskShape(SQUARE)])
    assert masks.rendered(120, 160) is masks.rendered(120, 160)
    assert masks.rendered(240, 320) is not masks.rendered(120, 160)
    assert masks.rendered(120, 160).covered_fraction == pytest.approx(0.25, abs=0.03)


def test_every_pixel_the_polygon_touches_is_masked():
    # edges at 319.75 and 180.25 px: the pixels they cut through are masked too
    out = PrivacyMasks([MaskShape(SQUARE)]).apply(frame(721, 1279))
    assert (out[180, 319:960] == 0).all() and (out[180:541, 319] == 0).all()


def test_a_masked_image_masks_lazily_once_and_reads_like_a_frame_image():
    image = frame()
    lazy = masked(image, PrivacyMasks([MaskShape(SQUARE)]))
    assert isinstance(lazy, MaskedImage) and lazy.shape == (120, 160, 3)
    first = bgr_image(lazy)
    assert bgr_image(lazy) is first and not first.flags.writeable
    assert (first[inside_square()] == 0).all()
    assert masked(image, None) is image and masked(lazy, lazy.masks) is lazy


def test_an_nv12_frame_is_masked_after_its_conversion():
    nv12 = np.full((180, 160), 200, dtype=np.uint8)
    out = bgr_image(masked(HostNv12Image(nv12), PrivacyMasks([MaskShape(SQUARE)])))
    assert out.shape == (120, 160, 3) and (out[inside_square()] == 0).all() and out[0, 0].any()


def test_many_readers_share_one_masked_copy():
    lazy = masked(frame(), PrivacyMasks([MaskShape(SQUARE)]))
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(id(bgr_image(lazy)))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1


class _Camera:
    def __init__(self, camera_id, privacy):
        self.id, self.privacy = camera_id, privacy


def _privacy(masks, detect=True):
    from edge_app.config.schema_privacy import CameraPrivacyConfig
    return CameraPrivacyConfig(masks=[{"polygon": [list(p) for p in m]} for m in masks], detect=detect)


def test_the_book_keeps_a_camera_s_masks_while_they_do_not_change():
    book = MaskBook()
    book.configure([_Camera("a", _privacy([SQUARE])), _Camera("b", _privacy([]))])
    first = book.masks("a")
    assert first is not None and book.masks("b") is None and book.hidden_from_detector("a") is None
    book.configure([_Camera("a", _privacy([SQUARE], detect=False))])
    assert book.masks("a") is first and book.hidden_from_detector("a") is first
    book.configure([_Camera("a", _privacy([((0, 0), (1, 0), (1, 1))]))])
    assert book.masks("a") is not first
    book.configure([])
    assert book.masks("a") is None


class _Feed:
    waits_for_consumer = True
    policy = "drop"

    def __init__(self, frames):
        self._frames = list(frames)

    def take(self):
        return self._frames.pop(0) if self._frames else None


def test_a_feed_hidden_from_the_detector_hands_out_masked_frames():
    from edge_app.capture.frame import Frame
    image = frame()
    masks = PrivacyMasks([MaskShape(SQUARE)])
    feed = detector_feed(_Feed([Frame("cam", 1, 0.0, 0.0, image)]), masks)
    assert isinstance(feed, MaskedFeed) and feed.waits_for_consumer and feed.policy == "drop"
    taken = feed.take()
    assert (taken.image[inside_square()] == 0).all() and taken.frame_id == 1
    assert (image[inside_square()] != 0).any() and feed.take() is None
    plain = _Feed([])
    assert detector_feed(plain, None) is plain
