"""The appliance loads a model again when its engine process dies. NOT TensorRT, NOT CUDA.

The appliance runs for real (a test:// camera, MQTT off); its detector is the product's
``TensorRTDetector`` with ``model.engine_process``, its engine on the TensorRT stand-in (ONNX
Runtime behind the engine API) in a real child process, and ``SharedHostCudaDevice`` (POSIX
shared memory) in place of CUDA IPC, as in ``test_engine_process.py``.
"""
from __future__ import annotations

import os
import signal

import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import parse_config
from edge_app.detect.tensorrt import TensorRTDetector
from edge_app.appliance.model_change import BROKEN_RELOAD_EVERY_S, reload_due
from testkit.waiting import wait_for
from testkit.tensorrt_standin.shared_host_cuda import SharedHostCudaDevice

SHARED_DEVICE = "testkit.tensorrt_standin.shared_host_cuda:open_shared_device"


@pytest.mark.parametrize("failure, last_reload_s, now_s, due", [
    (None, None, 100.0, False),                                   # a working model is left alone
    ("the engine process exited (code -9)", None, 100.0, True),   # the first reload at once
    ("the engine process exited (code -9)", 90.0, 100.0, False),  # not again within the interval
    ("the engine process exited (code -9)", 100.0 - BROKEN_RELOAD_EVERY_S, 100.0, True),
])
def test_when_a_broken_model_is_loaded_again(failure, last_reload_s, now_s, due):
    assert reload_due(failure, last_reload_s, now_s) is due


def test_a_killed_engine_process_is_replaced_and_frames_are_analysed_again(standin_trt, monkeypatch, tmp_path,
                                                                             model_path):
    monkeypatch.setattr(TensorRTDetector, "engine_process_device", SHARED_DEVICE)
    made, devices = [], []

    def factory(model, **options):
        devices.append(SharedHostCudaDevice())
        made.append(TensorRTDetector(model, device=devices[-1], **options))
        return made[-1]

    config = parse_config({
        "device_id": "dev",
        "cameras": [{"id": "cam", "source": "test://box?fps=10&width=320&height=240"}],
        "model": {"path": str(model_path), "engine_dir": str(tmp_path / "engines"),
                  "max_batch": 1, "engine_process": True},
        "mqtt": {"enabled": False},
        "api": {"enabled": False},
    })
    appliance = Appliance(config, detector_factory=factory)
    appliance.start()
    try:
        def analysed():
            return appliance.reads.cameras()[0].frames_analyzed

        wait_for(lambda: analysed() >= 3, 60, "frames analysed by the first engine process")
        first = made[0]
        old_pid = first.describe()["engine_process"]
        os.kill(old_pid, signal.SIGKILL)
        wait_for(lambda: len(made) == 2 and appliance._detector is made[1], 60, "the model to be loaded again")
        assert made[1].describe()["engine_process"] not in (None, old_pid)
        since = analysed()
        wait_for(lambda: analysed() >= since + 3, 60, "frames analysed by the new engine process")
        wait_for(lambda: first._runtime is None, 30, "the broken model to be closed")
        assert made[1].failure is None
    finally:
        appliance.stop()
        for device in devices:
            device.close()
