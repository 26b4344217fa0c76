"""The GPU benchmark: raw engine, then the whole appliance with NVDEC and with CPU decoding, in one run.

    python -m bench.gpu pipeline [--model PATH] [--clip PATH] [--seconds N] [--json OUT] [--markdown OUT]

The model runs on ``TorchFp16StandIn`` (``bench.gpu.torch_engine``): the product's TensorRT detector
with its engine replaced by the ONNX model converted with onnx2torch and run by PyTorch in FP16
on CUDA, because TensorRT is not available on the test machine. Sections:

- raw engine: ``detector.infer`` on a batch already letterboxed into a device input slot, at
  batch 1, 4 and 8 (graph replay, outputs copied to pinned host memory, stream synchronised);
- full pipeline: the real ``Appliance`` (capture, scheduler, GPU letterbox, model, decode + NMS,
  MQTT publish to a real broker) with 1, 4 and 8 cameras of a 1080p30 H.264 clip, each camera
  once with ``decoder: nvdec`` and once with ``decoder: ffmpeg`` (OpenCV/FFmpeg on the CPU),
  read from the file (``realtime: false``, as fast as the pipeline takes frames) and from an
  RTSP server (``bench.gpu rtsp-serve``, in its own process, paced at the clip's 30 frames/s);
  ``max_batch`` is the number of cameras; tracking, events and snapshots on (the defaults) with
  a zone and a line per camera, unless ``--tracking off`` / ``--no-counting``.

The default clip is the camera-like scene of ``bench.cpu.camera_scene`` (a bus and four people
walking through a panning, noisy 1080p30 view at 4 Mbit/s); ``--clip`` takes another.

Each row: frames/s as the appliance counted them (every one is published, ``publish_empty``),
its ratio to the raw engine at the same batch, the process's CPU time per analysed frame (all
threads and the decoder processes; the benchmark's MQTT subscriber runs in a process of its own,
``bench.common.mqtt_watch.WatcherProcess``, and is not counted), latency p50/p99 from the
``latency_ms`` of the received messages and from capture to arrival at the subscriber.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import logging
import os
import shlex
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence
from unittest import mock

from bench.common.detectors import load_detector, model_config
from bench.common.full import measure_full
from bench.common.jobs import Job, guarded, run_rounds
from bench.common.machine import describe_machine
from bench.common.provenance import TORCH_STANDIN, collect, write_results
from bench.common.media import clip_frames
from bench.cpu.camera_scene import SceneSettings, ensure_camera_scene
from bench.common.raw import measure_raw
from bench.common.rounds import summarise_pipeline, summarise_raw
from bench.common.settings import add_switch_interval_argument, apply_switch_interval
from bench.gpu.parity import check_parity
from bench.gpu.report import finish, markdown
from bench.gpu.rtsp_launch import RtspServerProcess
from bench.gpu.settings import DECODER_SETTINGS, DECODERS, TRANSPORTS, GpuBenchSettings
from edge_app.cuda import gil_held_calls
from edge_app.cuda import engine_process_choice
from edge_app.cuda.mps import mps_status
from edge_app.detect.tensorrt.engine_process import EngineWork

log = logging.getLogger(__name__)

#: the frame image each decode path delivers: NVDEC's stays on the GPU as NV12
EXPECTED_IMAGE_TYPES = {"nvdec": "DeviceNv12Image", "ffmpeg": "ndarray"}


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu pipeline", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="ONNX model with a dynamic batch (default: the shared dynbatch YOLOv8n)")
    parser.add_argument("--clip", type=Path, help="a 1080p30 H.264 clip (default: made from the shared images with ffmpeg)")
    parser.add_argument("--seconds", type=float, help="measuring time of each configuration, split over the rounds (default 8)")
    parser.add_argument("--rounds", type=int, help="rounds per configuration (default 2)")
    parser.add_argument("--cameras", type=int, nargs="+", help="camera counts (default 1 4 8)")
    parser.add_argument("--batches", type=int, nargs="+", help="raw engine batch sizes (default 1 4 8)")
    parser.add_argument("--decoders", nargs="+", choices=DECODERS, help="decode paths (default both)")
    parser.add_argument("--transports", nargs="+", choices=TRANSPORTS, help="camera sources (default file and rtsp)")
    parser.add_argument("--mqtt-host", default=None)
    parser.add_argument("--mqtt-port", type=int, default=None)
    parser.add_argument("--qos", type=int, choices=(0, 1), default=None, dest="mqtt_qos",
                        help="the appliance's mqtt.qos (default 1, as in the configuration's default)")
    parser.add_argument("--tracking", choices=("on", "off"), default="on",
                        help="tracking and events (default on, the appliance's default)")
    parser.add_argument("--no-counting", action="store_true", help="no zone and line per camera")
    parser.add_argument("--tracker-processes", default="auto",
                        help="the appliance's tracking.processes: auto (its default) or 0-16 (0: the trackers in its process)")
    parser.add_argument("--lanes", type=int, help="result lanes instead of the appliance's rule (experiments)")
    parser.add_argument("--no-cuda-graphs", action="store_true", help="run the stand-in eagerly (experiments)")
    parser.add_argument("--json", type=Path, help="results (default bench/results/gpu.json)")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    add_switch_interval_argument(parser)
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> GpuBenchSettings:
    overrides: Dict[str, Any] = {}
    for name, key in (("model", "model_path"), ("clip", "clip_path"), ("seconds", "window_s"), ("rounds", "rounds"),
                      ("cameras", "cameras"), ("batches", "raw_batches"), ("decoders", "decoders"),
                      ("transports", "transports"), ("mqtt_host", "mqtt_host"), ("mqtt_port", "mqtt_port"),
                      ("mqtt_qos", "mqtt_qos")):
        value = getattr(args, name)
        if value is not None:
            overrides[key] = value
    if args.no_cuda_graphs:
        overrides["use_cuda_graphs"] = False
    overrides["tracking"] = args.tracking == "on"
    overrides["counting"] = not args.no_counting
    overrides["tracker_processes"] = args.tracker_processes if args.tracker_processes == "auto" else int(args.tracker_processes)
    overrides["lanes"] = args.lanes
    return GpuBenchSettings(**overrides)


def describe_gpu() -> Dict[str, Any]:
    import torch

    try:
        converter = importlib.metadata.version("onnx2torch")
    except importlib.metadata.PackageNotFoundError:
        converter = None
    info: Dict[str, Any] = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "onnx2torch": converter,
                            "cuda_mps": mps_status().running}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / (1 << 30), 1),
                    multiprocessors=props.multi_processor_count)
    return info


# -- the measurements, one round each ---------------------------------------------------------------
def _standin(settings: GpuBenchSettings, model: Any, engine_process: bool = False, **_options: Any):
    from bench.gpu.torch_engine import TorchFp16StandIn

    return TorchFp16StandIn(model, use_cuda_graphs=settings.use_cuda_graphs, engine_process=engine_process)


def _raw(settings: GpuBenchSettings, batch: int, frames: list, window_s: float) -> dict:
    load = lambda path, max_batch: _standin(settings, model_config(path, max_batch))  # noqa: E731
    return measure_raw(settings.model_path, batch, frames, window_s, settings.warmup_s, load=load)


def _full(settings: GpuBenchSettings, clip: Path, cameras: int, decoder: str, sources: Optional[List[str]], window_s: float) -> dict:
    s = settings
    path = DECODER_SETTINGS[decoder]
    choice = engine_process_choice.choose(path.engine_process, engine_process_choice.host_facts())
    engine_pids: List[Optional[int]] = []
    batch_sizes: List[int] = []
    calls_keep_gil: List[bool] = []
    works: List[Any] = []  # the engine process's account, taken when the appliance closes the detector
    batch_times_s: List[float] = []

    def factory(model: Any, **options: Any):
        detector = _standin(s, model, engine_process=choice.enabled, **options)
        described = detector.describe()
        engine_pids.append(described.get("engine_process"))
        calls_keep_gil.append(bool(described.get("cuda", {}).get("queueing_calls_keep_gil")))
        infer, close = detector.infer, detector.close

        def counted(batch: Any) -> Any:  # how full the model's batches are, over the whole run
            batch_sizes.append(batch.size)
            batch_times_s.append(time.perf_counter())
            return infer(batch)

        def closing() -> None:
            works.append(detector.engine_work())
            close()

        detector.infer, detector.close = counted, closing
        return detector

    # the appliance's process opens its CUDA devices while running: the library name decides
    library = gil_held_calls.LIBRARY if path.gil_held_calls else "libcuda-calls-through-cuda-python"
    with mock.patch.object(gil_held_calls, "LIBRARY", library):
        row = measure_full(clip, cameras, s.model_path, s.batch_for_cameras(cameras), window_s, s.warmup_s,
                           s.batch_timeout_ms, s.mqtt_host, s.mqtt_port, analysis=s.tracking, counting=s.counting,
                           detector_factory=factory,
                           decoder=path.decoder, sources=sources, warm_timeout_s=s.start_timeout_s,
                           nvdec_processes=path.nvdec_processes, mqtt_qos=s.mqtt_qos,
                           tracker_processes=s.tracker_processes, lanes=s.lanes)
    wanted = EXPECTED_IMAGE_TYPES.get(path.decoder)
    row = {**row, "engine_process": bool(engine_pids and engine_pids[-1]), "engine_process_reason": choice.reason,
           "mqtt_qos": s.mqtt_qos,
           "queueing_calls_keep_gil": bool(calls_keep_gil and calls_keep_gil[-1]),
           "mean_batch_whole_run": round(sum(batch_sizes) / len(batch_sizes), 2) if batch_sizes else None,
           **_engine_work(works[-1] if works else None, batch_times_s)}
    if row.get("status") == "ok" and path.gil_held_calls != row["queueing_calls_keep_gil"]:
        row = {**row, "status": "error", "error": f"gil_held_calls {path.gil_held_calls} was asked for, but "
               f"queueing_calls_keep_gil is {row['queueing_calls_keep_gil']}"}
    if row.get("status") == "ok" and choice.enabled != row["engine_process"]:
        row = {**row, "status": "error", "error": f"engine_process {choice.enabled} was asked for, "
               f"but the model ran {'in' if row['engine_process'] else 'outside'} an engine process"}
    if row.get("status") == "ok" and wanted and row.get("image_types") != [wanted]:
        # a decoder setting the capture ignored would measure the other path under this one's name
        row = {**row, "status": "error", "error": f"decoder {decoder} delivered {row.get('image_types')} frames, not {wanted}"}
    if row.get("status") == "ok" and not row.get("warmed_up"):
        # a camera that never delivered (a decoder this machine lacks, say) makes the row meaningless
        row = {**row, "status": "error", "error": "cameras did not deliver frames within "
               f"{s.start_timeout_s:.0f} s: " + "; ".join(f"{k}: {v}" for k, v in row.get("camera_errors", {}).items())}
    return row


def _engine_work(work: Optional[EngineWork], batch_times_s: List[float]) -> Dict[str, Any]:
    """The engine process's own time per batch and how busy it was between the run's first and
    last batch (warm-up included): near 1, the engine sets the pace; well below, the appliance
    does not feed it fast enough."""
    if work is None or not work.answered or len(batch_times_s) < 2:
        return {}
    span_s = batch_times_s[-1] - batch_times_s[0]
    return {"engine_busy_ms_per_batch_whole_run": round(work.busy_s / work.answered * 1000.0, 3),
            "engine_busy_fraction_whole_run": round(work.busy_s / span_s, 3) if span_s > 0 else None}


def _parity(s: GpuBenchSettings) -> Dict[str, Any]:
    """The stand-in's detections on the sample images against the ONNX Runtime backend's."""
    from edge_app.commands.demo_clip import IMAGE_SUFFIXES
    from edge_app.detect import load_image

    images = sorted(p for p in s.images_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    reference = load_detector(s.model_path, len(images))
    try:
        standin = _standin(s, model_config(s.model_path, len(images)))
        try:
            return {"status": "ok", "reference": "onnxruntime (CPU, float32)", **check_parity(images, reference, standin, load_image),
                    "standin": standin.describe()}
        finally:
            standin.close()
    finally:
        reference.close()


def plan_jobs(s: GpuBenchSettings, clip: Path, frames: list, rtsp_urls: Optional[List[str]]) -> List[Job]:
    jobs = [Job("raw", f"raw batch {batch}", partial(_raw, s, batch, frames), {"model": s.model_path.name, "batch": batch})
            for batch in s.raw_batches]
    for transport in s.transports:
        for decoder in s.decoders:
            for cameras in s.cameras:
                sources = rtsp_urls[:cameras] if transport == "rtsp" else None
                identity = {"transport": transport, "decoder": decoder, "cameras": cameras, "batch": s.batch_for_cameras(cameras),
                            "model": s.model_path.name, "tracking_events": s.tracking, "counting": s.counting,
                            "tracker_processes": s.tracker_processes, "lanes_asked": s.lanes}
                jobs.append(Job("full", f"{transport} {decoder} {cameras} camera(s)",
                                partial(_full, s, clip, cameras, decoder, sources), identity))
    return jobs


def run_gpu_benchmark(s: GpuBenchSettings) -> Dict[str, Any]:
    clip = s.clip_path or ensure_camera_scene(s.work_dir, SceneSettings(size=s.clip_size_wh, fps=s.clip_fps))
    frames = clip_frames(clip)
    server: Optional[RtspServerProcess] = None
    rtsp_urls: Optional[List[str]] = None
    results: Dict[str, Any] = {"clip": {"path": str(clip), "frame_wh": [frames[0].shape[1], frames[0].shape[0]], "fps": s.clip_fps},
                               "raw": [], "full": []}
    results["parity"] = guarded("parity", lambda _: _parity(s), 0.0)
    try:
        if "rtsp" in s.transports:
            server = RtspServerProcess(clip, s.clip_fps, [f"cam{i}" for i in range(max(s.cameras))], port=s.rtsp_port)
            rtsp_urls = server.start()
            results["rtsp_server"] = server.describe()
        jobs = plan_jobs(s, clip, frames, rtsp_urls)
        run_rounds(jobs, s.rounds, s.window_s, retry_errors=False)
    finally:
        if server is not None:
            results["rtsp_server"] = {**results.get("rtsp_server", {}), **server.stop()}
    summarise = {"raw": summarise_raw, "full": summarise_pipeline}
    for job in jobs:
        results[job.section].append({**job.identity, **summarise[job.section](job.rounds)})
    return finish(results, float(s.clip_fps))


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        logging.getLogger("edge_app").setLevel(logging.WARNING)
    settings = settings_from(args)
    switch_interval_ms = apply_switch_interval(args.switch_interval_ms)
    started = datetime.datetime.now(datetime.timezone.utc)
    header: Dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "switch_interval_ms": switch_interval_ms,
        "command": "python -m bench.gpu pipeline " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        "machine": {**describe_machine(), **describe_gpu()},
        "engine": "PyTorch FP16 via onnx2torch, a stand-in for TensorRT (not available on this machine)",
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(settings).items()},
    }
    results = run_gpu_benchmark(settings)
    finished = datetime.datetime.now(datetime.timezone.utc)
    header["load_average_end"] = list(os.getloadavg())
    table = markdown(results)
    document = {"meta": {**header, "duration_s": round((finished - started).total_seconds(), 1)}, **results, "table_markdown": table}
    out = args.json or settings.work_dir / "gpu.json"
    write_results(out, document, collect(TORCH_STANDIN))
    if args.markdown:
        args.markdown.write_text(table)
    print(table)
    print(f"results: {out} ({document['meta']['duration_s']} s)")
    return 0
