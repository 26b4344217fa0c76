"""Drawing detections and encoding JPEGs (edge_app.detect.annotate)."""
import cv2
import numpy as np
import pytest

from edge_app.detect.annotate import class_color, draw_detections, encode_jpeg
from edge_app.detect.detections import Detections
from tests.api.conftest import bus_detections


def test_drawing_returns_a_copy_and_leaves_the_source_alone(bus_image):
    source = bus_image.copy()
    drawn = draw_detections(source, bus_detections())
    assert np.array_equal(source, bus_image)
    assert drawn.shape == bus_image.shape and drawn.dtype == np.uint8
    assert not np.array_equal(drawn, bus_image)


def test_boxes_are_drawn_in_the_colour_of_their_class():
    image = np.full((200, 300, 3), 128, np.uint8)
    dets = Detections(np.array([[50, 80, 250, 190]], np.float32), np.array([0.9], np.float32), np.array([5], np.int32), ("a", "b", "c", "d", "e", "bus"))
    drawn = draw_detections(image, dets, line_width_px=3)
    assert tuple(drawn[190, 150]) == class_color(5)  # bottom edge, away from the label
    assert class_color(0) != class_color(5)


@pytest.mark.parametrize(
    "box",
    [[-50, -50, 40, 40], [280, 180, 900, 900], [0, 0, 299, 199], [100, 100, 100, 100], [120, 90, 60, 30]],
)
def test_boxes_at_or_beyond_the_edges_are_clipped(box):
    image = np.zeros((200, 300, 3), np.uint8)
    dets = Detections(np.array([box], np.float32), np.array([0.5], np.float32), np.array([0], np.int32))
    assert draw_detections(image, dets).shape == (200, 300, 3)


def test_grayscale_frames_are_drawn_in_colour():
    drawn = draw_detections(np.zeros((120, 160), np.uint8), bus_detections()[:1])
    assert drawn.shape == (120, 160, 3)


def test_no_detections_is_an_unchanged_copy(bus_image):
    assert np.array_equal(draw_detections(bus_image, Detections.empty()), bus_image)


def test_encode_jpeg_round_trips_and_quality_matters(bus_image):
    small, large = encode_jpeg(bus_image, 20), encode_jpeg(bus_image, 95)
    assert small[:2] == b"\xff\xd8" and len(small) < len(large)
    decoded = cv2.imdecode(np.frombuffer(large, np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape == bus_image.shape and cv2.PSNR(decoded, bus_image) > 35


@pytest.mark.parametrize(
    "image, quality",
    [(np.zeros((8, 8, 3), np.uint8), 0), (np.zeros((8, 8, 3), np.uint8), 101), (np.zeros((8, 8, 3), np.float32), 80)],
)
def test_encode_jpeg_refuses_bad_input(image, quality):
    with pytest.raises(ValueError):
        encode_jpeg(image, quality)
