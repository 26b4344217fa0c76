"""Comparing two detectors' results in the TensorRT backend's tests."""
from __future__ import annotations

import numpy as np


def assert_same_detections(a, b, confidence_atol: float = 1e-6) -> None:
    """Same classes in the same order, boxes within 1e-3 px, confidences within ``confidence_atol``."""
    assert a.class_id.tolist() == b.class_id.tolist()
    np.testing.assert_allclose(a.xyxy, b.xyxy, atol=1e-3)
    np.testing.assert_allclose(a.confidence, b.confidence, atol=confidence_atol)


def assert_retuned_alike(tested, reference, warm_up_image, images, tuning) -> list:
    """Retune both detectors after one batch; the next batch must agree. Returns its results."""
    tested.detect([warm_up_image])
    tested.retune(**tuning)
    reference.retune(**tuning)
    results = tested.detect(images)
    for mine, theirs in zip(results, reference.detect(images)):
        assert_same_detections(mine, theirs)
    return results
