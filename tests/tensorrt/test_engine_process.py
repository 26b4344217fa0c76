"""``model.engine_process``: the engine and its GPU decoding in a child process. NOT TensorRT, NOT CUDA.

The child is a real process started the way the product starts it, speaking the product's pipe
protocol. In it the model runs on the TensorRT stand-in (ONNX Runtime behind the engine API), and
the "device" on both sides is ``SharedHostCudaDevice``: POSIX shared memory in place of CUDA IPC,
numpy emulations in place of the letterbox and decoding kernels. ``tests/gpu/test_engine_process_gpu.py``
runs the same path through real CUDA IPC on a GPU.
"""
from __future__ import annotations

import os
import signal
import socket

import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.tensorrt import TensorRTDetector
from edge_app.detect.tensorrt.engine_process import EngineProcess, PendingBatch
from tests.tensorrt.same_detections import assert_retuned_alike, assert_same_detections
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice
from testkit.tensorrt_standin.shared_host_cuda import SharedHostCudaDevice

SHARED_DEVICE = "testkit.tensorrt_standin.shared_host_cuda:open_shared_device"




@pytest.fixture
def shared_device_in_child(monkeypatch):
    monkeypatch.setattr(TensorRTDetector, "engine_process_device", SHARED_DEVICE)


@pytest.fixture
def shared_device():
    device = SharedHostCudaDevice()
    yield device
    device.close()


@pytest.fixture
def pair(standin_trt, make_model, shared_device_in_child, shared_device):
    """(detector with an engine process, the same model in-process)."""
    remote = TensorRTDetector(make_model(max_batch=3, engine_process=True), device=shared_device)
    local = TensorRTDetector(make_model(max_batch=3), device=HostMemoryCudaDevice(emulate_kernels=True))
    yield remote, local
    remote.close()
    local.close()


def test_the_engine_runs_in_another_process_and_gives_the_same_detections(pair, bus_image, zidane_image):
    remote, local = pair
    pid = remote.describe()["engine_process"]
    assert isinstance(remote._runtime, EngineProcess) and pid not in (None, os.getpid())
    assert remote.engine_process_problem is None and local.describe()["engine_process"] is None
    assert remote.postprocessing == "gpu" and remote.preprocessing == "gpu"
    batch = remote.preprocess([bus_image, zidane_image, bus_image])
    pending = remote.infer(batch)
    assert isinstance(pending, PendingBatch)
    results = remote.postprocess(pending, batch)
    assert results[0].count("person") == 4 and results[0].count("bus") == 1
    for mine, theirs in zip(results, local.detect([bus_image, zidane_image, bus_image])):
        assert_same_detections(mine, theirs)


@pytest.mark.parametrize("mps_running", [False, True])
def test_an_engine_process_without_mps_is_said_in_the_log(standin_trt, make_model, shared_device_in_child,
                                                          shared_device, monkeypatch, tmp_path, caplog, mps_running):
    """Without MPS the engine process takes turns on the GPU with the decoder processes: the
    operator is told where CUDA looked for the daemon, and how to start it."""
    pipes = tmp_path / "nvidia-mps"
    pipes.mkdir()
    daemon = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # where the MPS daemon listens
    daemon.bind(str(pipes / "control"))
    if mps_running:
        daemon.listen(1)
    else:
        daemon.close()  # its socket left behind, as after "quit"
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(pipes))
    caplog.set_level("WARNING", logger="edge_app.detect.tensorrt.backend")
    detector = TensorRTDetector(make_model(max_batch=1, engine_process=True), device=shared_device)
    try:
        said = [r.getMessage() for r in caplog.records if "MPS" in r.getMessage()]
        if mps_running:
            assert said == []
        else:
            assert len(said) == 1 and str(pipes) in said[0] and "systemd/edge-app-mps.service" in said[0]
    finally:
        detector.close()
        daemon.close()


def test_three_batches_in_flight_keep_their_own_input_slots(pair, bus_image, zidane_image):
    """Three batches are sent before the first answer is read, as the pipeline's threads do."""
    remote, local = pair
    images = [bus_image, zidane_image, bus_image]
    prepared = [remote.preprocess([image]) for image in images]
    outputs = [remote.infer(p) for p in prepared]
    assert all(isinstance(o, PendingBatch) for o in outputs)
    for image, output, batch in zip(images, outputs, prepared):
        assert_same_detections(remote.postprocess(output, batch)[0], local.detect([image])[0])


def test_answers_are_matched_to_their_batches_whatever_order_they_are_read_in(pair, bus_image, zidane_image):
    remote, local = pair
    first, second = remote.preprocess([bus_image]), remote.preprocess([zidane_image])
    pending_first, pending_second = remote.infer(first), remote.infer(second)
    assert_same_detections(remote.postprocess(pending_second, second)[0], local.detect([zidane_image])[0])
    assert_same_detections(remote.postprocess(pending_first, first)[0], local.detect([bus_image])[0])


@pytest.mark.parametrize("tuning", [{"classes": ["bus"]}, {"conf_threshold": 0.7}, {"iou_threshold": 0.3, "conf_threshold": 0.05}])
def test_retuning_reaches_the_engine_process_from_the_next_batch(pair, bus_image, zidane_image, tuning):
    remote, local = pair
    assert_retuned_alike(remote, local, bus_image, [bus_image, zidane_image], tuning)


def test_host_decoded_outputs_come_back_raw(standin_trt, make_model, shared_device_in_child, shared_device, bus_image):
    remote = TensorRTDetector(make_model(max_batch=2, engine_process=True), device=shared_device, gpu_decode=False)
    local = TensorRTDetector(make_model(max_batch=2), device=HostMemoryCudaDevice(emulate_kernels=True), gpu_decode=False)
    try:
        assert remote.postprocessing == "cpu" and remote.describe()["engine_process"]
        assert_same_detections(remote.detect([bus_image])[0], local.detect([bus_image])[0])
    finally:
        remote.close()
        local.close()


def test_the_engine_process_accounts_for_its_own_time_per_batch(pair, bus_image, zidane_image):
    """Its busy time is what it spent answering, measured in the child: more than nothing, less
    than the appliance waited in all (which includes the pipe and the wait for the answer)."""
    import time

    remote, local = pair
    assert local.engine_work() is None  # in-process: the pipeline's own stage times say it
    before = remote.engine_work()
    started_s = time.perf_counter()
    for _ in range(3):
        remote.detect([bus_image, zidane_image])
    waited_s = time.perf_counter() - started_s
    after = remote.engine_work()
    assert after.answered - before.answered == 3
    assert 0.0 < after.busy_s - before.busy_s < waited_s


def test_a_dead_engine_process_fails_every_batch_clearly(pair, bus_image):
    """And says so through ``failure``, which makes the appliance load the model again."""
    remote, _ = pair
    remote.detect([bus_image])
    assert remote.failure is None
    os.kill(remote.describe()["engine_process"], signal.SIGKILL)
    with pytest.raises(DetectorError, match=r"engine process exited \(code -9\).*when the model is loaded again"):
        remote.detect([bus_image])
    with pytest.raises(DetectorError, match="when the model is loaded again"):
        remote.infer(remote.preprocess([bus_image]))
    assert "engine process exited (code -9)" in remote.failure
    remote.close()


def test_a_closed_engine_process_is_no_failure(pair):
    remote, local = pair
    remote.close()
    assert remote.failure is None and local.failure is None


def test_without_the_gpu_letterbox_the_engine_stays_in_process(standin_trt, make_model, shared_device_in_child, bus_image):
    detector = TensorRTDetector(make_model(max_batch=1, engine_process=True), device=HostMemoryCudaDevice())
    try:
        assert detector.describe()["engine_process"] is None
        assert "NVRTC" in detector.engine_process_problem
        assert detector.detect([bus_image])[0].count("bus") == 1
    finally:
        detector.close()


def test_an_engine_process_that_cannot_start_leaves_the_engine_in_process(standin_trt, make_model, monkeypatch,
                                                                         shared_device, bus_image):
    """A device the child cannot open (here: no such opener) is reported, and the model still runs."""
    monkeypatch.setattr(TensorRTDetector, "engine_process_device", "testkit.tensorrt_standin.shared_host_cuda:no_such_opener")
    detector = TensorRTDetector(make_model(max_batch=1, engine_process=True), device=shared_device)
    try:
        assert detector.describe()["engine_process"] is None
        assert "could not load the engine" in detector.engine_process_problem
        assert "no_such_opener" in detector.engine_process_problem
        assert detector.detect([bus_image])[0].count("bus") == 1
    finally:
        detector.close()


def test_closing_stops_the_engine_process(pair):
    remote, _ = pair
    process = remote._runtime._process
    remote.close()
    assert not process.is_alive() and process.exitcode == 0


def test_the_pipelines_threads_run_every_frame_through_the_engine_process(pair, bus_image, zidane_image):
    """The real three-thread pipeline: the model thread sends, the publishing thread waits."""
    import time

    from edge_app.capture.frame import Frame
    from edge_app.pipeline.results import ResultStore
    from edge_app.pipeline.runner import Pipeline
    from edge_app.pipeline.scheduler import BatchScheduler

    remote, local = pair

    class FileFeed:
        waits_for_consumer = True

        def __init__(self, camera_id, image, count):
            self.frames = [Frame(camera_id, i + 1, time.time(), time.monotonic(), image) for i in range(count)]

        def take(self):
            return self.frames.pop(0) if self.frames else None

    feeds = {"bus": FileFeed("bus", bus_image, 5), "zidane": FileFeed("zidane", zidane_image, 5)}
    published = []
    pipeline = Pipeline(lambda: remote, lambda: feeds, ResultStore(published.append), BatchScheduler(2, 0.005))
    pipeline.reconfigure({cid: 0 for cid in feeds}, 2, 0.005)
    pipeline.start()
    deadline = time.monotonic() + 60
    while len(published) < 10 and time.monotonic() < deadline:
        pipeline.notify_frame()
        time.sleep(0.02)
    pipeline.stop()
    assert pipeline.errors == 0
    assert sorted((f.camera_id, f.frame_id) for f in published) == sorted((c, i) for c in feeds for i in range(1, 6))
    expected = dict(zip(("bus", "zidane"), local.detect([bus_image, zidane_image])))
    for frame in published:
        assert_same_detections(frame.detections, expected[frame.camera_id])


@pytest.mark.parametrize("mps_running", [False, True])
def test_auto_runs_the_engine_process_where_mps_answers_and_says_why(standin_trt, make_model, shared_device_in_child,
                                                                   shared_device, monkeypatch, tmp_path, caplog,
                                                                   mps_running):
    """model.engine_process: auto (the default) on a host without /etc/nv_tegra_release: the MPS
    daemon answering decides, and the log says which way and why."""
    from edge_app.cuda import engine_process_choice

    monkeypatch.setattr(engine_process_choice, "is_jetson", lambda: False)
    pipes = tmp_path / "nvidia-mps"
    pipes.mkdir()
    daemon = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    daemon.bind(str(pipes / "control"))
    if mps_running:
        daemon.listen(1)
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(pipes))
    caplog.set_level("INFO", logger="edge_app.detect.tensorrt.backend")
    model = make_model(max_batch=1, engine_process="auto")
    detector = TensorRTDetector(model, device=shared_device)
    try:
        assert isinstance(detector._runtime, EngineProcess) is mps_running
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("model.engine_process")]
        assert said == [f"model.engine_process {'on' if mps_running else 'off'}: " + (
            "auto: on, a discrete GPU with NVIDIA MPS running" if mps_running else
            engine_process_choice.choose("auto", engine_process_choice.host_facts()).reason)]
    finally:
        detector.close()
        daemon.close()
