"""Section a: the detector alone, ``infer`` on ready input tensors, per batch size."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, List, Sequence

import numpy as np

from bench.common.detectors import load_detector
from bench.common.resources import ResourceMeter
from edge_app.detect import Detector, PreparedBatch

log = logging.getLogger(__name__)


def measure_raw(model_path: Path, batch: int, frames: Sequence[np.ndarray], window_s: float, warmup_s: float,
                load: Callable[[Path, int], Detector] = load_detector) -> dict:
    """One window of ``detector.infer`` on a letterboxed batch prepared once beforehand.

    A batch the backend placed in a device input slot stays there: nothing else preprocesses
    while this runs, so the slot is never overwritten.
    """
    meter = ResourceMeter()
    meter.reset_peak()
    detector = load(model_path, batch)
    try:
        chosen: List[np.ndarray] = [frames[i % len(frames)] for i in range(batch)]
        prepared = detector.preprocess(chosen)
        if prepared.tensor is not None:
            # ready once and never touched again: letterbox buffers rotate, this copy does not
            prepared = PreparedBatch(tensor=prepared.tensor.copy(), metas=prepared.metas)
        warmup_end_s = time.perf_counter() + warmup_s
        warmup_runs = 0
        while warmup_runs < 2 or time.perf_counter() < warmup_end_s:
            detector.infer(prepared)
            warmup_runs += 1
        batch_ms: List[float] = []
        meter.start()
        end_s = time.perf_counter() + window_s
        while not batch_ms or time.perf_counter() < end_s:
            start_s = time.perf_counter()
            detector.infer(prepared)
            batch_ms.append((time.perf_counter() - start_s) * 1000.0)
        usage = meter.stop()
    finally:
        detector.close()
    log.info("raw %s batch %d: %.2f images/s", model_path.name, batch, len(batch_ms) * batch / usage.wall_s)
    return {"model": model_path.name, "batch": batch, "frames": len(batch_ms) * batch, "batch_ms": batch_ms, "usage": usage}
