"""Detections: each box's label, from one lookup per model's label tuple, as label_of names it."""
import numpy as np
import pytest

from edge_app.detect.detections import Detections

COCO_LIKE = tuple(f"class{i}" for i in range(80))


def _detections(class_ids, labels) -> Detections:
    n = len(class_ids)
    return Detections(np.tile([0, 0, 10, 10], (n, 1)), np.full(n, 0.5), np.asarray(class_ids, np.int32), labels)


@pytest.mark.parametrize("labels", [COCO_LIKE, list(COCO_LIKE), ("person",), ()],
                         ids=["a tuple", "a list", "one label", "none"])
@pytest.mark.parametrize("class_ids", [[], [0], [0, 79, 5, 0], [-1, 80, 3, 1000]],
                         ids=["no boxes", "one", "several", "outside the labels"])
def test_each_box_is_labelled_as_label_of_names_its_class(labels, class_ids):
    detections = _detections(class_ids, labels)
    assert detections.label_array().tolist() == [detections.label_of(c) for c in class_ids]


def test_a_label_array_can_be_changed_without_changing_the_next_frames():
    first = _detections([0, 1], COCO_LIKE).label_array()
    first[0] = "changed"
    assert _detections([0, 1], COCO_LIKE).label_array().tolist() == ["class0", "class1"]
    unknown = _detections([500], COCO_LIKE).label_array()  # names a class by its number, on its own copy
    assert unknown.tolist() == ["500"] and _detections([79], COCO_LIKE).label_array().tolist() == ["class79"]
