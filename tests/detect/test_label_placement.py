"""Box labels are placed so that none hides another (edge_app/detect/label_placement.py)."""
from __future__ import annotations

import pytest

from edge_app.detect.label_placement import LabelRect, LabelToPlace, place_labels

WIDTH, HEIGHT = 640, 480


def label(x1, y1, x2, y2, w=60, h=20) -> LabelToPlace:
    return LabelToPlace(x1, y1, x2, y2, w, h)


@pytest.mark.parametrize("labels, first", [
    ([label(100, 100, 200, 300)], LabelRect(100, 80, 60, 20)),  # above its box
    ([label(100, 5, 200, 300)], LabelRect(100, 5, 60, 20)),  # no room above: inside its top
    ([label(600, 100, 700, 300)], LabelRect(580, 80, 60, 20)),  # kept inside the picture
    # people side by side, their boxes overlapping: the labels stack instead of covering
    ([label(100, 100, 200, 300), label(110, 102, 210, 300), label(120, 98, 220, 300)], LabelRect(100, 80, 60, 20)),
    ([label(100, 100, 200, 300)] * 6, LabelRect(100, 80, 60, 20)),
    ([label(100, 460, 200, 479)] * 3, LabelRect(100, 440, 60, 20)),  # at the bottom edge: above and inside
])
def test_labels_never_hide_each_other(labels, first):
    placed = place_labels(labels, WIDTH, HEIGHT)
    assert placed[0] == first and len(placed) == len(labels)
    assert not [(a, b) for i, a in enumerate(placed) for b in placed[i + 1:] if a.overlaps(b)]
    assert all(0 <= r.x <= WIDTH - r.w and 0 <= r.y <= HEIGHT - r.h for r in placed)


def test_a_label_with_no_free_place_left_keeps_its_first():
    # a picture one label high: the second label has nowhere else to go
    placed = place_labels([label(0, 0, 100, 20), label(0, 0, 100, 20)], 100, 20)
    assert placed == [LabelRect(0, 0, 60, 20), LabelRect(0, 0, 60, 20)]
