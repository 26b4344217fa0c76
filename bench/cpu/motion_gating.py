"""Motion gating, measured: 8 cameras, 6 showing a static scene with sensor noise and 2 people walking.

    python -m bench.cpu motion-gating [--model PATH] [--backend auto|onnxruntime|tensorrt] [--decoder auto|ffmpeg|nvdec]
                                  [--window-s 20] [--warmup-s 6] [--size 1280x720] [--fps 5]

The real ``Appliance`` runs in this process on looped H.264 files (720p at 5 frames/s by default:
eight 1080p streams at 10 frames/s take both cores of a 2-core machine to decode alone) played in real time (like
live cameras), tracking on, MQTT off, once with ``motion.enabled: false`` and once with it on
(two rounds, the second in reverse order). What it prints (and writes to
``bench/results/motion_gating.json``):

* engine batches/s and analysed frames/s, gating off vs on (the detector's ``infer`` is counted);
* CPU per camera: the capture thread's own CPU (decode, conversion, motion) plus the camera's
  share of the pipeline's CPU (gather, model, publish) by its analysed frames, static vs walking;
* what the motion check costs per 1080p frame (CPU, one thread), from a BGR frame and from the
  Y plane of NV12, and what a frame dropped before conversion saves (``grab`` vs ``read``);
* whether the walking cameras gave the same events with gating on as off (count per label).

Nothing here needs a GPU; with ``--backend tensorrt --decoder nvdec`` it runs the GPU path too
(the motion check then shrinks the Y plane of each NV12 frame on the GPU; see docs/gpu-benchmark.md).
``--backend torch-standin`` runs the model on ``bench.gpu.torch_engine.TorchFp16StandIn`` (PyTorch
FP16, NOT TensorRT) where TensorRT is not installed. With NVDEC decoder processes, each camera's
decoder process CPU is counted as that camera's (each camera reads its own link to the clip, so
the processes can be told apart), and the motion check is also timed on a device frame.
"""
from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from bench.cpu.motion_clips import make_clips, noisy, static_scene
from testkit.paths import REPO, shared_dir
from bench.common.provenance import TORCH_STANDIN, collect, engine_of, write_results
from edge_app.health.cpu_groups import child_groups, read_cpu

DEFAULT_MODEL = shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"
STANDIN = "torch-standin"
STATIC_CAMERAS = 6
WALKING_CAMERAS = 2

log = logging.getLogger("bench.cpu.motion_gating")


# -- the appliance run ---------------------------------------------------------------------------------
@dataclass
class GatingRun:
    gating: bool
    window_s: float
    batches_per_s: float
    frames_per_s: float
    offered_per_s: float  # frames handed to the pipeline (not dropped early, not held back by the gate)
    analysed: Dict[str, int]
    capture_cpu_s: Dict[str, float]  # the capture thread and the decoder process, together
    pipeline_cpu_s: float  # the pipeline's threads and the tracker processes
    process_cpu_s: float
    events: Dict[str, Dict[str, int]] = field(default_factory=dict)  # camera -> label -> events started
    # capture_cpu_s in its two parts, and the tracker processes' share of pipeline_cpu_s
    capture_thread_cpu_s: Dict[str, float] = field(default_factory=dict)
    decoder_cpu_s: Dict[str, float] = field(default_factory=dict)
    trackers_cpu_s: float = 0.0

    def camera_cpu_percent(self, camera_id: str) -> float:
        """The camera's capture thread plus its share of the pipeline (by analysed frames), % of one CPU."""
        total = sum(self.analysed.values())
        share = self.pipeline_cpu_s * self.analysed.get(camera_id, 0) / total if total else 0.0
        return 100.0 * (self.capture_cpu_s.get(camera_id, 0.0) + share) / self.window_s


class _CountingDetector:
    """The detector, with its ``infer`` calls (engine batches) counted."""

    def __init__(self, detector: Any) -> None:
        self._detector = detector
        self.batches = 0

    def infer(self, batch: Any) -> Any:
        self.batches += 1
        return self._detector.infer(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._detector, name)


def run_appliance(static: Path, walking: Path, model: Path, backend: str, decoder: str, gating: bool,
                  warmup_s: float, window_s: float, max_batch: int) -> GatingRun:
    from edge_app.appliance.appliance import Appliance
    from edge_app.config.schema import AppConfig
    from edge_app.detect.factory import create_detector

    cameras = [{"id": f"static{i}", "source": str(_own_link(static, f"static{i}"))} for i in range(STATIC_CAMERAS)]
    cameras += [{"id": f"walk{i}", "source": str(_own_link(walking, f"walk{i}"))} for i in range(WALKING_CAMERAS)]
    by_source = {c["source"]: c["id"] for c in cameras}
    config = AppConfig.model_validate({
        "device_id": "bench-motion",
        "cameras": [dict(c, loop=True, realtime=True, decoder=decoder) for c in cameras],
        # the stand-in is made by the factory below; "tensorrt" would make the appliance look for TensorRT first
        "model": {"path": str(model), "backend": "onnxruntime" if backend == STANDIN else backend, "max_batch": max_batch},
        "mqtt": {"enabled": False}, "api": {"enabled": False},
        "tracking": {"enabled": True}, "events": {"enabled": True},
        "motion": {"enabled": gating},
    })
    counted: List[_CountingDetector] = []

    def factory(model_config: Any, **options: Any) -> Any:
        if backend == STANDIN:
            from bench.gpu.torch_engine import TorchFp16StandIn

            options = {k: v for k, v in options.items() if k == "engine_process"}
            detector = _CountingDetector(TorchFp16StandIn(model_config, **options))
        else:
            detector = _CountingDetector(create_detector(model_config, **options))
        counted.append(detector)
        return detector

    appliance = Appliance(config, detector_factory=factory)
    started: Counter = Counter()
    appliance._publisher.publish_event = lambda message: (  # type: ignore[method-assign]
        started.update([(message.after.camera_id, message.after.label)]) if message.type == "new" else None) or True
    appliance.start()
    try:
        time.sleep(warmup_s)
        analysed_before = {c.id: c.frames_analyzed for c in appliance.reads.cameras()}
        offered_before = _offered(appliance)
        batches_before = sum(d.batches for d in counted)
        before = read_cpu()
        started.clear()
        time.sleep(window_s)
        after = read_cpu()
        thread_names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
        batches = sum(d.batches for d in counted) - batches_before
        analysed = {c.id: c.frames_analyzed - analysed_before.get(c.id, 0) for c in appliance.reads.cameras()}
        offered = _offered(appliance) - offered_before
    finally:
        appliance.stop()
    cpu = _by_name(after.threads, before.threads, thread_names)
    # a camera's capture: its thread, and its decoder process where it has one (NVDEC)
    thread = {cid: cpu.get(f"capture:{cid}", 0.0) for cid in analysed}
    decoders = _by_name(after.children, before.children, after.child_names)
    decoder = {cid: sum(v for name, v in decoders.items() if name.startswith("decode:") and
                        by_source.get(name.split(":", 1)[1]) == cid) for cid in analysed}
    capture = {cid: thread[cid] + decoder[cid] for cid in analysed}
    # tracking was the pipeline's own work before it moved to child processes: still counted as it
    trackers = child_groups(before, after).get("trackers", 0.0)
    pipeline = sum(seconds for name, seconds in cpu.items() if name.startswith("pipeline:")) + trackers
    events: Dict[str, Dict[str, int]] = {}
    for (camera_id, label), n in started.items():
        events.setdefault(camera_id, {})[label] = n
    return GatingRun(gating, window_s, round(batches / window_s, 2), round(sum(analysed.values()) / window_s, 2),
                     round(offered / window_s, 2), analysed, {k: round(v, 3) for k, v in capture.items()}, round(pipeline, 3),
                     round(after.process_s - before.process_s, 3), events,
                     {k: round(v, 3) for k, v in thread.items()}, {k: round(v, 3) for k, v in decoder.items()},
                     round(trackers, 3))


def _own_link(clip: Path, camera_id: str) -> Path:
    """A hard link to ``clip`` for one camera: a decoder process is named after its source."""
    link = clip.with_name(f"{clip.stem}.{camera_id}{clip.suffix}")
    if not link.exists():
        os.link(clip, link)
    return link


def _by_name(now: Dict[int, float], since: Dict[int, float], names: Dict[int, str]) -> Dict[str, float]:
    """CPU seconds between two readings (by thread id or pid) summed by name; unnamed ones left out."""
    cpu: Dict[str, float] = {}
    for key, seconds in now.items():
        if key in names:
            cpu[names[key]] = cpu.get(names[key], 0.0) + max(0.0, seconds - since.get(key, 0.0))
    return cpu


def _offered(appliance: Any) -> int:
    """Frames the cameras handed to the pipeline so far: captured, less those dropped before
    conversion and those the motion gate held back."""
    total = 0
    for worker in appliance._cameras.values():
        stats = worker.stats()
        motion = stats.get("motion")
        dropped_early = getattr(getattr(worker, "_gate", None), "dropped_early", 0)
        total += stats["frames_captured"] - dropped_early - (motion.frames_skipped if motion else 0)
    return total


# -- per frame costs ---------------------------------------------------------------------------------
def motion_cost_ms(size: Tuple[int, int], frames: int = 300) -> Dict[str, float]:
    """CPU ms per frame of the motion check (picture and detector), one thread, static noisy frames."""
    import cv2

    from edge_app.capture.gpu_image import HostNv12Image
    from edge_app.motion.detector import MotionDetector, small_grey

    cv2.setNumThreads(1)
    rng = np.random.default_rng(0)
    scene = static_scene(size)
    bgr = [noisy(scene, rng, 4.0) for _ in range(8)]
    nv12 = [HostNv12Image(np.ascontiguousarray(cv2.cvtColor(f, cv2.COLOR_BGR2YUV_I420))) for f in bgr]
    out = {}
    for name, images in (("bgr", bgr), ("nv12_y_plane", nv12)):
        detector = MotionDetector()
        detector.detect(small_grey(images[0]), 0.0)
        start = time.process_time()
        for k in range(frames):
            detector.detect(small_grey(images[k % len(images)]), k / 10)
        out[name] = round((time.process_time() - start) * 1000.0 / frames, 3)
    return out


def device_static_frame(device: Any, size: Tuple[int, int]) -> Any:
    """The static noisy scene as an NV12 frame in ``device`` memory (grey chroma), with a
    ``LumaShrinker`` as a decoder's frames have: what the motion check of a device frame reads."""
    from edge_app.capture.gpu_image import DeviceNv12Image, Nv12Planes
    from edge_app.capture.luma_shrinker import LumaShrinker

    width, height = size
    y = noisy(static_scene(size), np.random.default_rng(0), 4.0)[..., 0].copy()
    nv12 = np.concatenate([y, np.full((height // 2, width), 128, np.uint8)])
    buffer = device.alloc_device(nv12.nbytes)
    stream = device.create_stream()
    device.memcpy_htod_async(buffer.ptr, nv12, stream)
    stream.synchronize()
    planes = Nv12Planes(buffer.ptr, buffer.ptr + width * height, width, width, width, height)
    return DeviceNv12Image(planes, lambda p, host: None, keepalive=buffer, shrink=LumaShrinker(device))


def gpu_motion_cost_ms(size: Tuple[int, int], frames: int = 300) -> Optional[Dict[str, Any]]:
    """Wall and CPU ms per frame of the motion check of a 1080p NV12 frame in device memory (the
    Y plane shrunk, and blurred, on the GPU, only the small picture copied back), against the same
    check with the blur on the host, in one run; None without a GPU."""
    from edge_app.cuda import CudaError, open_device
    from edge_app.motion.detector import MotionDetector, small_grey

    try:
        device = open_device()
    except (CudaError, ImportError):
        return None
    image = device_static_frame(device, size)
    # the appliance's path (MotionDetector.picture: shrink and blur on the GPU, float32 back) and the
    # one before it (shrink on the GPU, blur on the host), interleaved in blocks of 50 frames
    paths = {"blurred_on_gpu": lambda d: d.picture(image), "blurred_on_host": lambda d: small_grey(image)}
    detectors = {name: MotionDetector() for name in paths}
    for name, picture in paths.items():
        for k in range(20):
            detectors[name].detect(picture(detectors[name]), k / 10)
    spent = {name: [0.0, 0.0, 0.0, 0.0] for name in paths}  # wall, cpu, picture-only wall and cpu
    for block in range(frames // 50):
        for name, picture in paths.items():
            detector = detectors[name]
            start, cpu_start = time.perf_counter(), time.process_time()
            for k in range(50):
                detector.detect(picture(detector), 2 + (block * 50 + k) / 10)
            spent[name][0] += time.perf_counter() - start
            spent[name][1] += time.process_time() - cpu_start
            start, cpu_start = time.perf_counter(), time.process_time()
            for k in range(50):
                picture(detector)
            spent[name][2] += time.perf_counter() - start
            spent[name][3] += time.process_time() - cpu_start
    done = frames // 50 * 50
    out: Dict[str, Any] = {}
    for name, (wall, cpu, picture_wall, picture_cpu) in spent.items():
        out[name] = {"wall": round(wall * 1000.0 / done, 4), "cpu": round(cpu * 1000.0 / done, 4),
                     "picture_wall": round(picture_wall * 1000.0 / done, 4),
                     "picture_cpu": round(picture_cpu * 1000.0 / done, 4)}
    out["wall"], out["cpu"] = out["blurred_on_gpu"]["wall"], out["blurred_on_gpu"]["cpu"]
    out["shrink_wall"] = out["blurred_on_gpu"]["picture_wall"]
    out["downloads"] = image.downloads
    return out


def early_drop_saving_ms(clip: Path, frames: int = 100) -> Dict[str, float]:
    """CPU ms per frame of ``read`` (decode + BGR conversion + copy) and ``grab`` (decode only)."""
    import cv2

    out = {}
    for name in ("read", "grab"):
        capture = cv2.VideoCapture(str(clip), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 1])
        start = time.process_time()
        done = 0
        while done < frames and (capture.read()[0] if name == "read" else capture.grab()):
            done += 1
        out[name] = round((time.process_time() - start) * 1000.0 / max(1, done), 3)
        capture.release()
    out["saved"] = round(out["read"] - out["grab"], 3)
    return out


# -- report ----------------------------------------------------------------------------------------------
def _tables(runs: List[GatingRun], motion: Dict[str, float], drop: Dict[str, float], size: Tuple[int, int],
            fps: int = 0) -> str:
    off = [r for r in runs if not r.gating]
    on = [r for r in runs if r.gating]

    def mean(values: List[float]) -> float:
        return round(sum(values) / len(values), 2) if values else 0.0

    def per_camera(group: List[GatingRun], prefix: str) -> float:
        return mean([mean([r.camera_cpu_percent(c) for c in r.analysed if c.startswith(prefix)]) for r in group])

    lines = ["| gating | frames offered to the pipeline/s | analysed frames/s | engine batches/s "
             "| CPU % per static camera | CPU % per walking camera | static / walking |", "|---|---|---|---|---|---|---|"]
    for name, group in (("off", off), ("on", on)):
        static, busy = per_camera(group, "static"), per_camera(group, "walk")
        lines.append(f"| {name} | {mean([r.offered_per_s for r in group])} | {mean([r.frames_per_s for r in group])} "
                     f"| {mean([r.batches_per_s for r in group])} | {static} | {busy} "
                     f"| {round(static / busy, 2) if busy else '-'} |")
    if on and fps:
        # what a gated static camera still pays: decoding every frame (grab), which gating cannot avoid
        static, busy = per_camera(on, "static"), per_camera(on, "walk")
        decode = round(fps * drop["grab"] / 10.0, 2)
        lines += ["", "| gating on, per static camera | CPU % of one core |", "|---|---|",
                  f"| all | {static} |", f"| decoding every frame (grab × {fps} frames/s, CPU path) | {decode} |",
                  f"| the rest (conversion and motion of checked frames, keepalive analyses) | {round(static - decode, 2)} |",
                  f"| the rest / walking camera | {round((static - decode) / busy, 2) if busy else '-'} |"]
    if any(r.capture_thread_cpu_s for r in runs):
        def part(group: List[GatingRun], prefix: str, field_name: str) -> float:
            return mean([mean([100.0 * getattr(r, field_name).get(c, 0.0) / r.window_s for c in r.analysed
                               if c.startswith(prefix)]) for r in group])

        lines += ["", "| gating | camera | capture thread CPU % | decoder process CPU % |", "|---|---|---|---|"]
        for name, group in (("off", off), ("on", on)):
            for prefix in ("static", "walk"):
                lines.append(f"| {name} | {prefix} | {part(group, prefix, 'capture_thread_cpu_s')} "
                             f"| {part(group, prefix, 'decoder_cpu_s')} |")
        lines.append(f"\ntracker processes, CPU % of one core: off {mean([100.0 * r.trackers_cpu_s / r.window_s for r in off])}, "
                     f"on {mean([100.0 * r.trackers_cpu_s / r.window_s for r in on])}")
    for what, key in (("frames offered", "offered_per_s"), ("frames analysed", "frames_per_s"),
                      ("engine batches", "batches_per_s")):
        before, after = mean([getattr(r, key) for r in off]), mean([getattr(r, key) for r in on])
        if before and on:
            change = 100.0 * (after / before - 1.0)
            lines.append(f"\n{what}/s with gating on: {abs(change):.0f} % {'fewer' if change <= 0 else 'more'}")
    lines += ["", f"| per frame, one thread (motion: 1920x1080; read and grab: {size[0]}x{size[1]}) | CPU ms |", "|---|---|",
              f"| motion check from BGR | {motion['bgr']} |", f"| motion check from the NV12 Y plane | {motion['nv12_y_plane']} |",
              *([f"| motion check of an NV12 frame in device memory (wall / CPU) | {motion['device_nv12_wall']} / "
                 f"{motion['device_nv12_cpu']} |"] if "device_nv12_wall" in motion else []),
              *([f"| of it, the picture (shrink and blur on the GPU, copy back, wait) (wall / CPU) | "
                 f"{motion['device_nv12']['blurred_on_gpu']['picture_wall']} / "
                 f"{motion['device_nv12']['blurred_on_gpu']['picture_cpu']} |"] if "device_nv12" in motion else []),
              f"| read (decode, BGR conversion, copy) | {drop['read']} |", f"| grab (decode only: a frame dropped early) | {drop['grab']} |",
              f"| saved per frame dropped before conversion | {drop['saved']} |"]
    lines += ["", "| round | gating | walking cameras' events started in the window |", "|---|---|---|"]
    for index, run in enumerate(runs):
        walking = {c: e for c, e in sorted(run.events.items()) if c.startswith("walk")}
        static_events = sum(sum(e.values()) for c, e in run.events.items() if c.startswith("static"))
        lines.append(f"| {index + 1} | {'on' if run.gating else 'off'} | {walking} (static cameras: {static_events}) |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--backend", default="onnxruntime", choices=["auto", "onnxruntime", "tensorrt", STANDIN],
                        help=f"{STANDIN}: PyTorch FP16 on CUDA in the TensorRT detector's place (NOT TensorRT)")
    parser.add_argument("--decoder", default="ffmpeg", choices=["auto", "ffmpeg", "gstreamer", "nvdec"])
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--warmup-s", type=float, default=6.0)
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2, help="each round runs off and on; even rounds in reverse")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--fps", type=int, default=5)
    parser.add_argument("--work-dir", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "motion_gating.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    size = tuple(int(v) for v in args.size.split("x"))
    args.work_dir.mkdir(parents=True, exist_ok=True)
    static, walking = make_clips(args.work_dir, size, args.fps)
    motion = motion_cost_ms((1920, 1080))
    gpu_motion = gpu_motion_cost_ms((1920, 1080))
    if gpu_motion is not None:
        motion["device_nv12_wall"], motion["device_nv12_cpu"] = gpu_motion["wall"], gpu_motion["cpu"]
        motion["device_nv12"] = gpu_motion  # both paths, and the picture's share of each
    drop = early_drop_saving_ms(static)
    runs: List[GatingRun] = []
    for round_index in range(args.rounds):
        order = (False, True) if round_index % 2 == 0 else (True, False)
        for gating in order:
            run = run_appliance(static, walking, args.model, args.backend, args.decoder, gating, args.warmup_s,
                                args.window_s, args.max_batch)
            log.warning("gating %s: %.1f batches/s, %.1f frames/s", "on" if gating else "off", run.batches_per_s,
                        run.frames_per_s)
            runs.append(run)
    report = _tables(runs, motion, drop, size, args.fps if args.decoder == "ffmpeg" else 0)
    print(report)
    engine = TORCH_STANDIN if args.backend == STANDIN else engine_of(args.model, args.backend)
    write_results(args.out, {"args": {k: str(v) for k, v in vars(args).items()}, "motion_cost_ms": motion,
                             "early_drop_ms": drop, "runs": [asdict(r) for r in runs]}, collect(engine))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
