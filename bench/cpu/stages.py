"""Section e (stages): CPU time per 1080p frame of preprocess and postprocess, measured alone.

``time.process_time`` counts every thread of the process, so work OpenCV hands to its own
thread pool is included; nothing else runs while this is measured.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, Dict, Sequence

import numpy as np

from bench.common.detectors import load_detector

log = logging.getLogger(__name__)


def _per_call_ms(call: Callable[[int], None], window_s: float, min_calls: int = 5) -> Dict[str, float]:
    calls = 0
    cpu_start_s, wall_start_s = time.process_time(), time.perf_counter()
    end_s = wall_start_s + window_s
    while calls < min_calls or time.perf_counter() < end_s:
        call(calls)
        calls += 1
    cpu_s, wall_s = time.process_time() - cpu_start_s, time.perf_counter() - wall_start_s
    return {"cpu_ms": round(cpu_s * 1000.0 / calls, 3), "wall_ms": round(wall_s * 1000.0 / calls, 3), "calls": calls}


def measure_stages(model_path: Path, frames: Sequence[np.ndarray], window_s: float) -> dict:
    detector = load_detector(model_path, 1)
    try:
        prepared = [detector.preprocess([frame]) for frame in frames]
        outputs = [[o.copy() for o in detector.infer(p)] for p in prepared]
        for i in range(3):  # warm caches and lazily allocated buffers
            detector.preprocess([frames[i % len(frames)]])
        pre = _per_call_ms(lambda i: detector.preprocess([frames[i % len(frames)]]), window_s)
        # decoding reads only the metas of a PreparedBatch, so reused letterbox buffers do not matter
        post_ms = _per_call_ms(lambda i: detector.postprocess(outputs[i % len(frames)], prepared[i % len(frames)]), window_s)
        detections = [len(d) for k in range(len(frames)) for d in detector.postprocess(outputs[k], prepared[k])]
    finally:
        detector.close()
    height, width = frames[0].shape[:2]
    result = {
        "frame_wh": [int(width), int(height)],
        "model": model_path.name,
        "preprocess": pre,
        "postprocess": post_ms,
        "pre_plus_post_cpu_ms": round(pre["cpu_ms"] + post_ms["cpu_ms"], 3),
        "detections_per_frame": detections,
    }
    log.info("stages: preprocess %.2f ms CPU, postprocess %.2f ms CPU", pre["cpu_ms"], post_ms["cpu_ms"])
    return result
