"""Ultralytics ``predict(stream=True)`` on a clip, timed; runs inside the Ultralytics venv.

    .venv-bench/bin/python bench/cpu/ultralytics_worker.py --model M --clip C --seconds S

Standalone on purpose (no edge_app import): it runs in its own interpreter. Prints one JSON line:
frames/s over the window after the warm-up frames, the mean of Ultralytics' own per-frame
``speed`` figures (preprocess, inference, postprocess ms), its process CPU use and peak RSS.
``rect=False`` letterboxes to the full square input, as edge-app does (and as a model with fixed
spatial dimensions needs even when its batch dimension is dynamic).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Dict, List, Optional, Sequence


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _mean(values: List[float]) -> Optional[float]:
    return round(sum(values) / len(values), 3) if values else None


def run(model_path: str, clip: str, window_s: float, warmup_frames: int, conf: float, iou: float) -> Dict:
    import torch
    import ultralytics
    from ultralytics import YOLO

    model = YOLO(model_path, task="detect")
    speeds: Dict[str, List[float]] = {"preprocess": [], "inference": [], "postprocess": []}
    seen = measured = passes = 0
    start_s = cpu_start_s = end_s = None
    done = False
    while not done:
        passes += 1
        for result in model.predict(source=clip, stream=True, verbose=False, conf=conf, iou=iou, rect=False):
            seen += 1
            if seen == warmup_frames:
                start_s, cpu_start_s = time.perf_counter(), _cpu_s()
                end_s = start_s + window_s
                continue
            if start_s is None:
                continue
            measured += 1
            for key in speeds:
                speeds[key].append(float(result.speed.get(key, 0.0)))
            if time.perf_counter() >= end_s:
                done = True
                break
    wall_s = time.perf_counter() - start_s
    cpu_s = _cpu_s() - cpu_start_s
    return {
        "status": "ok",
        "frames": measured,
        "frames_per_s": round(measured / wall_s, 2),
        "wall_s": round(wall_s, 3),
        "cpu_s": round(cpu_s, 3),
        "speed_ms": {key: _mean(values) for key, values in speeds.items()},
        "clip_passes": passes,
        "cpu_percent": round(100.0 * cpu_s / wall_s, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "versions": {"ultralytics": ultralytics.__version__, "torch": torch.__version__},
        "torch_threads": torch.get_num_threads(),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--clip", required=True)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup-frames", type=int, default=5)
    parser.add_argument("--conf", type=float, default=0.25)
    parser.add_argument("--iou", type=float, default=0.45)
    args = parser.parse_args(argv)
    result = run(args.model, args.clip, args.seconds, args.warmup_frames, args.conf, args.iou)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
