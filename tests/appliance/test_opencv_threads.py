"""OpenCV runs single-threaded in the appliance, whichever device the model runs on.

Each camera already works in a thread of its own, and what OpenCV does per frame (the motion
check's blur and dilation on a 320-wide picture, a snapshot's drawing) is too small to share
out: on an H200 test machine with its model on the GPU, OpenCV's default pool of 16 threads
spent 3.3 ms of CPU on a motion check that took 0.21 ms.
"""
from __future__ import annotations

import cv2

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import parse_config
from edge_app.detect.factory import create_detector


def test_opencv_is_single_threaded_when_the_model_runs_on_a_gpu(model_path):
    def on_gpu(model, **options):  # the real model, reported as running off the host CPU (a GPU backend)
        detector = create_detector(model, **options)
        detector.runs_on_host_cpu = False
        return detector

    before = cv2.getNumThreads()
    cv2.setNumThreads(4)  # what OpenCV picks by itself on a multi-core host
    config = parse_config({"device_id": "dev", "cameras": [{"id": "yard", "source": "test://box?fps=5&width=320&height=240"}],
                           "model": {"path": str(model_path)}, "mqtt": {"enabled": False}, "api": {"enabled": False}})
    appliance = Appliance(config, detector_factory=on_gpu)
    appliance.start()
    try:
        assert cv2.getNumThreads() == 1
    finally:
        appliance.stop()
        cv2.setNumThreads(before)
