"""Where the model stage loses time: each step's wall time against its thread's CPU time.

    python -m bench.gpu stage-waits [--clip CLIP] [--cameras 8] [--seconds 5] [--mqtt-port PORT]

The same steps are timed twice in one process: in a loop that calls ``detector.infer`` alone
(what ``bench.gpu pipeline`` calls the raw engine), then inside the real appliance with N
cameras of the clip decoded by NVDEC. For every call it records the wall time and the CPU time
of the calling thread (``time.thread_time``). Their difference is time the thread spent not
running: waiting for the GPU, for a lock, or to get Python's interpreter lock back after a call
that released it. A step that only queues work on the GPU (a copy, a graph launch) should wait
for nothing. The steps are methods of the PyTorch stand-in (``bench.gpu.torch_runtime``) and the
product's TensorRT detector and GPU decoder, wrapped for the run and restored after it.

MQTT is off unless ``--mqtt-port`` names a broker: the question is the model stage, and
publishing (to a broker and to this benchmark's subscriber) would add threads of its own.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from bench.common.provenance import TORCH_STANDIN, collect, write_results
from bench.common.settings import add_switch_interval_argument, apply_switch_interval

#: (module, class, method, label): the model stage's steps, outermost first
STEPS = (
    ("edge_app.detect.tensorrt.backend", "TensorRTDetector", "preprocess", "preprocess (letterbox launch)"),
    ("edge_app.detect.tensorrt.backend", "TensorRTDetector", "infer", "infer (all below)"),
    ("bench.gpu.torch_runtime", "TorchEngineRuntime", "run_on_device", "engine run (copy, replay, sync)"),
    ("bench.gpu.torch_runtime", "TorchEngineRuntime", "_enqueue", "engine enqueue (copy, replay)"),
    ("edge_app.detect.yolo_outputs_gpu", "GpuYoloDecoder", "run", "GPU decode (kernels, copies, sync)"),
)


@dataclass(frozen=True)
class StepFigures:
    calls: int
    wall_ms_p50: float
    cpu_ms_p50: float

    @property
    def waited_ms_p50(self) -> float:
        return round(self.wall_ms_p50 - self.cpu_ms_p50, 3)


@dataclass
class StepTimer:
    """Wraps methods so each call records (wall ms, thread CPU ms); ``restore`` undoes it."""

    samples: Dict[str, List[Tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    _originals: List[Tuple[type, str, Callable]] = field(default_factory=list)

    def wrap(self, cls: type, name: str, label: str) -> None:
        original = cls.__dict__[name]
        samples = self.samples[label]

        def timed(*args: Any, **kwargs: Any) -> Any:
            wall_s, cpu_s = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                samples.append(((time.perf_counter() - wall_s) * 1000.0, (time.thread_time() - cpu_s) * 1000.0))

        setattr(cls, name, timed)
        self._originals.append((cls, name, original))

    def restore(self) -> None:
        while self._originals:
            cls, name, original = self._originals.pop()
            setattr(cls, name, original)

    def clear(self) -> None:
        for samples in self.samples.values():
            samples.clear()

    def figures(self) -> Dict[str, StepFigures]:
        return {label: StepFigures(len(s), round(statistics.median(w for w, _ in s), 3), round(statistics.median(c for _, c in s), 3))
                for label, s in self.samples.items() if s}


def _wrap_steps(timer: StepTimer) -> None:
    for module, cls, method, label in STEPS:
        timer.wrap(getattr(importlib.import_module(module), cls), method, label)


def _as_rows(figures: Dict[str, StepFigures]) -> Dict[str, dict]:
    return {label: {"calls": f.calls, "wall_ms_p50": f.wall_ms_p50, "cpu_ms_p50": f.cpu_ms_p50,
                    "waited_ms_p50": f.waited_ms_p50} for label, f in figures.items()}


def measure(clip: Path, cameras: int, window_s: float, mqtt_port: Optional[int]) -> Dict[str, Any]:
    from bench.common.appliance_run import analysed_counts, bench_config, running
    from bench.common.detectors import model_config
    from bench.gpu.pipeline import _standin
    from bench.gpu.settings import GpuBenchSettings
    from bench.common.media import clip_frames
    from testkit.waiting import poll_until

    settings = GpuBenchSettings()
    timer = StepTimer()
    _wrap_steps(timer)
    try:
        detector = _standin(settings, model_config(settings.model_path, cameras))
        try:
            frames = clip_frames(clip)[:cameras]
            prepared = detector.preprocess(frames)
            for _ in range(20):
                detector.infer(prepared)
            timer.clear()
            end_s = time.perf_counter() + window_s
            while time.perf_counter() < end_s:
                detector.infer(prepared)
            alone = timer.figures()
        finally:
            detector.close()
        config = bench_config(clip, cameras, settings.model_path, cameras, settings.batch_timeout_ms, "127.0.0.1",
                              mqtt_port or 1883, analysis=False, decoder="nvdec")
        if mqtt_port is None:
            config = config.model_copy(update={"mqtt": config.mqtt.model_copy(update={"enabled": False})})
        with running(config, partial(_standin, settings)) as appliance:
            poll_until(lambda: min(analysed_counts(appliance).values() or [0]) >= 2, timeout_s=60)
            time.sleep(settings.warmup_s)
            timer.clear()
            before, start_s = sum(analysed_counts(appliance).values()), time.perf_counter()
            time.sleep(window_s)
            frames_per_s = (sum(analysed_counts(appliance).values()) - before) / (time.perf_counter() - start_s)
            in_pipeline = timer.figures()
    finally:
        timer.restore()
    return {"cameras": cameras, "mqtt": mqtt_port is not None, "pipeline_frames_per_s": round(frames_per_s, 1),
            "alone": _as_rows(alone), "in_pipeline": _as_rows(in_pipeline)}


def markdown(result: Dict[str, Any]) -> str:
    lines = [f"{result['cameras']} cameras, pipeline {result['pipeline_frames_per_s']} frames/s; medians per call, ms",
             "", "| step | alone: wall | alone: CPU | in pipeline: wall | in pipeline: CPU | in pipeline: waited |",
             "|---|---|---|---|---|---|"]
    for _module, _cls, _method, label in STEPS:
        alone, inside = result["alone"].get(label), result["in_pipeline"].get(label)
        if inside is None:
            continue
        left = f"{alone['wall_ms_p50']} | {alone['cpu_ms_p50']}" if alone else "– | –"
        lines.append(f"| {label} | {left} | {inside['wall_ms_p50']} | {inside['cpu_ms_p50']} | {inside['waited_ms_p50']} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu stage-waits", description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, required=True, help="a 1080p H.264 clip (bench.common.media.ensure_camera_clip)")
    parser.add_argument("--cameras", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--mqtt-port", type=int, help="publish to the broker on this local port (default: MQTT off)")
    parser.add_argument("--json", type=Path)
    add_switch_interval_argument(parser)
    args = parser.parse_args(argv)
    switch_interval_ms = apply_switch_interval(args.switch_interval_ms)
    result = {**measure(args.clip, args.cameras, args.seconds, args.mqtt_port), "switch_interval_ms": switch_interval_ms}
    if args.json:
        write_results(args.json, result, collect(TORCH_STANDIN))
    print(markdown(result))
    return 0
