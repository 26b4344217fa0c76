"""The GPU benchmark's parts that need no GPU: figures, tables, the parity check, the RTSP server.

No timing is asserted. The RTSP server is checked with a real client (OpenCV's FFmpeg) reading
real H.264 through it.
"""
import time

import numpy as np
import pytest

from bench.gpu.parity import compare, iou_xyxy
from bench.gpu.pipeline import _engine_work
from bench.gpu.report import appliance_cpu_ms, cpu_comparison, finish, markdown, targets
from bench.gpu.rtsp_serve import MAX_PAYLOAD, group_frames, packetize, split_nals
from edge_app.detect.tensorrt.engine_process import EngineWork
from edge_app.detect.detections import Detections
from testkit.skips import require_module


def _raw(batch, images_per_s):
    return {"batch": batch, "images_per_s": images_per_s, "rounds_per_s": [images_per_s], "ms_per_batch": {"median": 1.0},
            "cpu_ms_per_image": {"total": 0.5}, "resources": {"cpu_percent": 100.0}}


def _row(transport, decoder, cameras, fps, total_ms, watcher_ms=0.0):
    return {"transport": transport, "decoder": decoder, "cameras": cameras, "batch": cameras, "status": "ok",
            "frames_per_s": fps, "rounds_per_s": [fps], "cpu_ms_per_frame": {"total": total_ms, "watcher": watcher_ms},
            "latency_ms": {"p50": 10.0, "p99": 20.0, "count": 5}, "delivered_ms": {"p50": 11.0, "p99": 22.0, "count": 5},
            "resources": {"cpu_percent": 150.0}}


@pytest.mark.parametrize("shares, expected", [
    ({"total": 3.0, "watcher": 0.5}, 2.5),
    ({"total": 3.0}, 3.0),
    ({}, None),
])
def test_appliance_cpu_leaves_out_the_benchmarks_subscriber(shares, expected):
    assert appliance_cpu_ms({"cpu_ms_per_frame": shares}) == expected


@pytest.mark.parametrize("nvdec_fps, nvdec_ms, ffmpeg_ms, ratio, cpu_advantage, met", [
    (1800.0, 0.5, 3.0, 0.9, 6.0, (True, True)),
    (1000.0, 1.0, 3.0, 0.5, 3.0, (False, False)),
    (1600.0, 0.6, 3.0, 0.8, 5.0, (True, True)),  # exactly the goals
])
def test_goals_on_eight_camera_files(nvdec_fps, nvdec_ms, ffmpeg_ms, ratio, cpu_advantage, met):
    results = {"raw": [_raw(1, 500.0), _raw(8, 2000.0)],
               "full": [_row("file", "nvdec", 8, nvdec_fps, nvdec_ms + 0.2, 0.2), _row("file", "ffmpeg", 8, 900.0, ffmpeg_ms),
                        _row("rtsp", "nvdec", 8, 240.0, 1.0)]}
    finish(results, camera_fps=30.0)
    goals = results["targets"]
    assert goals["throughput_vs_raw"]["value"] == pytest.approx(ratio)
    assert goals["cpu_advantage"]["value"] == pytest.approx(cpu_advantage)
    assert (goals["throughput_vs_raw"]["met"], goals["cpu_advantage"]["met"]) == met
    rtsp = results["full"][2]
    assert rtsp["offered_fps"] == 240.0 and rtsp["ratio_to_offered"] == 1.0 and rtsp["ratio_to_raw"] == pytest.approx(0.12)


def test_a_missing_configuration_leaves_the_goal_unmeasured():
    results = {"raw": [_raw(8, 2000.0)], "full": [_row("file", "ffmpeg", 8, 900.0, 3.0),
                                                 {"transport": "file", "decoder": "nvdec", "cameras": 8, "batch": 8,
                                                  "status": "error", "error": "decoder nvdec needs PyNvVideoCodec"}]}
    finish(results, camera_fps=30.0)
    assert targets(results)["throughput_vs_raw"] == {"goal": ">= 0.8", "value": None, "met": None}
    table = markdown(results)
    assert "error: decoder nvdec needs PyNvVideoCodec" in table
    assert "| full pipeline, 8 camera files, NVDEC / raw engine at batch 8 | – | >= 0.8 | not measured |" in table


def test_cpu_comparison_pairs_the_decoders_per_source_and_camera_count():
    rows = [_row("file", "nvdec", 4, 1000.0, 0.5), _row("file", "ffmpeg", 4, 800.0, 2.5), _row("rtsp", "ffmpeg", 1, 30.0, 4.0)]
    for row in rows:
        row["appliance_cpu_ms_per_frame"] = appliance_cpu_ms(row)
    assert cpu_comparison(rows) == [
        {"transport": "file", "cameras": 4, "nvdec_cpu_ms": 0.5, "ffmpeg_cpu_ms": 2.5, "ffmpeg_over_nvdec": 5.0},
        {"transport": "rtsp", "cameras": 1, "nvdec_cpu_ms": None, "ffmpeg_cpu_ms": 4.0, "ffmpeg_over_nvdec": None},
    ]


def test_markdown_has_every_table():
    results = finish({"raw": [_raw(1, 500.0)], "full": [_row("file", "ffmpeg", 1, 400.0, 2.0)],
                      "parity": {"status": "ok", "match_iou": 0.9, "images": [
                          {"image": "bus.jpg", "reference": 5, "standin": 5, "matched": 5, "max_confidence_diff": 0.003}]}}, 30.0)
    table = markdown(results)
    for heading in ("Stand-in against ONNX Runtime", "Raw engine", "Full pipeline", "NVDEC against CPU decode", "Goals"):
        assert heading in table
    assert "| file | ffmpeg | 1 | 1 | 400.0 | 400 | 0.80 | – | 10 / 20 | 11 / 22 | 2.00 | 150 |" in table
    assert "| bus.jpg | 5 | 5 | 5 | 0.0030 |" in table


def _dets(boxes, classes, scores):
    return Detections(np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores, dtype=np.float32), np.array(classes, dtype=np.int32))


@pytest.mark.parametrize("standin, matched", [
    (_dets([[0, 0, 10, 10], [20, 20, 40, 40]], [0, 5], [0.9, 0.8]), 2),
    (_dets([[0, 0, 10, 10], [20, 20, 40, 40]], [0, 6], [0.9, 0.8]), 1),  # other class: no match
    (_dets([[0, 0, 10, 10], [25, 25, 45, 45]], [0, 5], [0.9, 0.8]), 1),  # IoU 0.39: no match
    (_dets([], [], []), 0),
])
def test_parity_matches_same_class_boxes_one_to_one(standin, matched):
    reference = _dets([[0, 0, 10, 10], [20, 20, 40, 40]], [0, 5], [0.91, 0.8])
    result = compare("x.jpg", reference, standin)
    assert (result.reference, result.standin, result.matched) == (2, len(standin), matched)
    assert result.max_confidence_diff == (pytest.approx(0.01, abs=1e-4) if matched else 0.0)


def test_iou_of_disjoint_and_equal_boxes():
    ious = iou_xyxy(np.array([[0, 0, 10, 10]], dtype=np.float64), np.array([[0, 0, 10, 10], [20, 20, 30, 30]], dtype=np.float64))
    assert ious.tolist() == [[1.0, 0.0]]


def test_annexb_split_and_grouping_into_pictures():
    sps, pps, idr, p1, p2 = b"\x67\x42\x00\x28", b"\x68\xce", b"\x65\x88" + b"\x01" * 10, b"\x41\x9a\x02", b"\x41\x9a\x03"
    stream = b"\x00\x00\x00\x01" + sps + b"\x00\x00\x00\x01" + pps + b"\x00\x00\x01" + idr + b"\x00\x00\x00\x01\x09\xf0" \
        + b"\x00\x00\x01" + p1 + b"\x00\x00\x01" + p2
    nals = split_nals(stream)
    assert nals == [sps, pps, idr, b"\x09\xf0", p1, p2]
    assert group_frames(nals) == [[sps, pps, idr], [p1], [p2]]


@pytest.mark.parametrize("size, packets", [(100, 1), (MAX_PAYLOAD, 1), (MAX_PAYLOAD + 1, 2), (5000, 4)])
def test_packetize_fragments_large_nal_units_as_fu_a(size, packets):
    nal = bytes([0x65]) + bytes(range(256)) * (size // 256) + bytes(size % 256 - 1 if size % 256 else 255)
    nal = nal[:size]
    out = packetize(nal)
    assert len(out) == packets and all(len(p) <= MAX_PAYLOAD for p in out)
    if packets == 1:
        assert out == [nal]
    else:
        assert all(p[0] == 0x7C for p in out)  # FU-A indicator with the NAL's NRI
        assert out[0][1] & 0x80 and out[-1][1] & 0x40 and all(p[1] & 0x1F == 5 for p in out)
        assert nal[:1] + b"".join(p[2:] for p in out)[:size - 1] == nal


@pytest.mark.slow
def test_rtsp_server_streams_a_real_clip_to_ffmpeg(tmp_path, images_dir):
    cv2 = require_module("cv2", extra="opencv")
    from bench.common.media import ensure_clip
    from bench.gpu.rtsp_launch import RtspServerProcess

    clip = ensure_clip(images_dir, tmp_path, (320, 240), 1.0, 30)
    server = RtspServerProcess(clip, 30.0, ["cam0", "cam1"])
    urls = server.start()
    try:
        capture = cv2.VideoCapture(urls[1], cv2.CAP_FFMPEG)
        assert capture.isOpened()
        started_s, shapes = time.monotonic(), set()
        for _ in range(75):  # more than the clip's 60 frames: across the loop seam
            ok, frame = capture.read()
            assert ok
            shapes.add(frame.shape)
        elapsed_s = time.monotonic() - started_s
        capture.release()
        assert shapes == {(240, 320, 3)}
        assert elapsed_s > 1.0  # paced in real time, not dumped at once
        assert not cv2.VideoCapture(urls[0].rsplit("/", 1)[0] + "/nope", cv2.CAP_FFMPEG).isOpened()
    finally:
        server.stop()


class _Steps:
    def outer(self, x):
        return self.inner(x) + 1

    def inner(self, x):
        time.sleep(0.02)
        return x * 2


def test_step_timer_records_nested_calls_and_tells_waiting_from_working():
    from bench.gpu.stage_waits import StepTimer

    timer = StepTimer()
    timer.wrap(_Steps, "outer", "outer")
    timer.wrap(_Steps, "inner", "inner")
    try:
        assert _Steps().outer(3) == 7  # the wrapped methods still compute what they did
        assert _Steps().outer(1) == 3
    finally:
        timer.restore()
    figures = timer.figures()
    assert {label: f.calls for label, f in figures.items()} == {"outer": 2, "inner": 2}
    # a sleep is waiting, not work: nearly all of its wall time is time not spent running
    assert figures["inner"].wall_ms_p50 >= 19.0
    assert figures["inner"].waited_ms_p50 > figures["inner"].cpu_ms_p50
    assert _Steps.__dict__["inner"].__qualname__ == "_Steps.inner"  # the originals are back


def test_stage_waits_table_lists_the_steps_timed_in_the_pipeline():
    from bench.gpu.stage_waits import STEPS, markdown

    row = {"calls": 3, "wall_ms_p50": 2.0, "cpu_ms_p50": 0.5, "waited_ms_p50": 1.5}
    labels = [label for *_rest, label in STEPS]
    result = {"cameras": 8, "pipeline_frames_per_s": 1000.0, "alone": {labels[1]: row},
              "in_pipeline": {labels[0]: row, labels[1]: row}}
    table = markdown(result).splitlines()
    assert table[0].startswith("8 cameras, pipeline 1000.0 frames/s")
    assert table[4] == f"| {labels[0]} | – | – | 2.0 | 0.5 | 1.5 |"
    assert table[5] == f"| {labels[1]} | 2.0 | 0.5 | 2.0 | 0.5 | 1.5 |"
    assert len(table) == 6  # steps that did not run in the pipeline are left out


def test_goals_are_also_given_with_the_model_in_an_engine_process_when_measured():
    results = {"raw": [_raw(8, 2000.0)],
               "full": [_row("file", "nvdec", 8, 1000.0, 1.0), _row("file", "nvdec+engine", 8, 1700.0, 0.5),
                        _row("file", "ffmpeg", 8, 900.0, 3.0)]}
    finish(results, camera_fps=30.0)
    goals = results["targets"]
    assert goals["throughput_vs_raw"]["value"] == pytest.approx(0.5)
    assert goals["throughput_vs_raw_engine_process"] == {"goal": ">= 0.8", "value": pytest.approx(0.85), "met": True}
    assert goals["cpu_advantage_engine_process"]["value"] == pytest.approx(6.0)
    assert "model.engine_process on" in markdown(results)
    assert "throughput_vs_raw_engine_process" not in targets({"raw": [], "full": [_row("file", "nvdec", 8, 1000.0, 1.0)]})


def test_the_default_configuration_has_its_own_goal_with_the_reason_engine_process_auto_gave():
    default = {**_row("file", "default", 8, 1640.0, 0.5), "engine_process": True,
               "engine_process_reason": "auto: on, a discrete GPU with NVIDIA MPS running"}
    results = {"raw": [_raw(8, 2000.0)], "full": [_row("file", "nvdec", 8, 1000.0, 1.0), default]}
    finish(results, camera_fps=30.0)
    goal = results["targets"]["throughput_vs_raw_default"]
    assert goal["value"] == pytest.approx(0.82) and goal["met"] is True and goal["engine_process"] is True
    assert goal["reason"].startswith("auto: on")
    assert "the default configuration (engine_process auto)" in markdown(results)
    assert "throughput_vs_raw_default" not in targets({"raw": [], "full": [_row("file", "nvdec", 8, 1000.0, 1.0)]})


def test_the_default_decode_path_leaves_engine_process_to_auto():
    from bench.gpu.settings import DECODER_SETTINGS
    from edge_app.cuda.engine_process_choice import HostFacts, choose

    path = DECODER_SETTINGS["default"]
    assert path.decoder == "nvdec" and path.nvdec_processes and path.engine_process == "auto"
    assert choose(path.engine_process, HostFacts(jetson=False, mps_running=True, mps_pipe_directory="/x")).enabled
    assert not choose(path.engine_process, HostFacts(jetson=False, mps_running=False, mps_pipe_directory="/x")).enabled


@pytest.mark.parametrize("name, group", [("engine", "engine"), ("decode:/clips/cam1.mp4", "decoders"), ("", "decoders"),
                                         ("edge-app-tracker-0", "trackers"), ("edge-app-tracker-3", "trackers")])
def test_child_processes_are_counted_by_their_name(name, group):
    from edge_app.health.cpu_groups import child_group

    assert child_group(name) == group


@pytest.mark.parametrize("work, batch_times_s, expected", [
    (EngineWork(4, 0.02), [10.0, 10.05, 10.1], {"engine_busy_ms_per_batch_whole_run": 5.0,
                                                "engine_busy_fraction_whole_run": 0.2}),
    (None, [10.0, 10.1], {}),  # the engine ran in the appliance's process
    (EngineWork(0, 0.0), [10.0, 10.1], {}),
    (EngineWork(1, 0.002), [10.0], {}),  # one batch: no span to be busy in
])
def test_the_engine_process_busy_figures(work, batch_times_s, expected):
    assert _engine_work(work, batch_times_s) == expected


def test_a_repeated_clip_holds_every_frame_of_each_pass(tmp_path, images_dir):
    cv2 = require_module("cv2", extra="opencv")
    from bench.common.media import ensure_clip, repeat_clip

    clip = ensure_clip(images_dir, tmp_path, (320, 240), 0.5, 30)
    longer = repeat_clip(clip, 3)
    assert longer.name == f"{clip.stem}_x3.mp4" and not list(tmp_path.glob("*.txt"))

    def frames(path):
        capture = cv2.VideoCapture(str(path))
        count = 0
        while capture.read()[0]:
            count += 1
        capture.release()
        return count

    assert frames(longer) == 3 * frames(clip) > 0
    assert repeat_clip(clip, 3) == longer  # made once


@pytest.mark.parametrize("lanes", [None, 1, 6])
def test_the_lanes_of_an_experiment_replace_the_pipelines_rule_only_while_it_runs(lanes):
    from bench.common.full import _lanes_rule
    from edge_app.pipeline.results import ResultStore
    from edge_app.pipeline.runner import Pipeline, default_lanes
    from edge_app.pipeline.scheduler import BatchScheduler

    def pipeline():
        return Pipeline(lambda: None, lambda: {}, ResultStore(lambda frame: None), BatchScheduler(1, 0.005))

    with _lanes_rule(lanes):
        assert pipeline()._lane_count == (default_lanes() if lanes is None else lanes)
    assert pipeline()._lane_count == default_lanes()


def test_a_pipeline_row_keeps_the_lanes_and_the_tracker_processes_it_ran_with():
    from bench.common.resources import Usage
    from bench.common.rounds import summarise_pipeline

    usage = Usage(wall_s=1.0, cpu_s=0.5, cpu_percent=50.0)
    row = {"cameras": 2, "model": "m.onnx", "batch": 2, "frames": 10, "per_camera_frames": {"a": 5, "b": 5},
           "latencies_ms": [1.0], "usage": usage, "tracker_processes_used": 4, "lanes": 4}
    summary = summarise_pipeline([row])
    assert (summary["tracker_processes_used"], summary["lanes"]) == (4, 4)


def test_motion_parts_times_each_part_and_says_clearly_when_there_is_no_gpu(monkeypatch, capsys):
    """``python -m bench.gpu motion-parts``: per call wall, thread and process CPU of a part; on a
    machine without a GPU (this one) it stops with a clear message, not a traceback."""
    import edge_app.cuda
    from bench.gpu import motion_parts

    calls = []
    figures = motion_parts.per_call_ms(lambda: calls.append(sum(range(2000))), calls=20, runs=3)
    assert set(figures) == {"wall", "thread_cpu", "process_cpu"} and figures["wall"] > 0
    assert len(calls) == 20 + 3 * 20  # warm-up, then the runs

    def no_gpu(*args, **kwargs):
        raise edge_app.cuda.CudaUnavailable("no CUDA device 0 (found 0)")

    monkeypatch.setattr(edge_app.cuda, "open_device", no_gpu)
    with pytest.raises(SystemExit) as stopped:
        motion_parts.main(["--calls", "5"])
    assert stopped.value.code == 2 and "needs cuda-python or pycuda and an NVIDIA GPU" in capsys.readouterr().err
