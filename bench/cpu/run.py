"""The edge-app benchmark on the host CPU: one run, one machine, every figure of the CPU targets.

    python -m bench.cpu run [--model PATH] [--batch-model PATH] [--seconds N] [--smoke] [--json OUT]
    python -m bench.cpu run --soak-minutes 10 --cameras 4 [--json OUT]

Sections: a. raw backend (detector.infer on ready tensors) per batch size; b. the pipeline on
pre-decoded frames for 1, 2, 4, 8 cameras; c. the full appliance, H.264 decode to MQTT publish,
for 1, 2, 4 cameras; d. Ultralytics predict(stream=True) on the same model and clip (in
.venv-bench); e. per-stage CPU per 1080p frame, latency, CPU use and peak RSS (in every row).
Prints markdown tables and writes everything as JSON (default bench/results/latest.json).
"""
from __future__ import annotations

import argparse
import datetime
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from bench.common.machine import describe_machine
from bench.common.provenance import ONNXRUNTIME_CPU, collect, write_results
from bench.common.media import ensure_clip
from bench.cpu.report import markdown
from bench.cpu.settings import BenchSettings
from bench.cpu.soak import run_soak, soak_markdown
from bench.cpu.suite import run_benchmark

log = logging.getLogger(__name__)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu run", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="model for batch 1 (default: the shared int8 YOLOv8n)")
    parser.add_argument("--batch-model", type=Path, help="dynamic-batch model for batches > 1 (default: the shared dynbatch YOLOv8n)")
    parser.add_argument("--seconds", type=float, help="measuring time of each configuration, split over the rounds (default 12)")
    parser.add_argument("--rounds", type=int, help="rounds per configuration, alternately forward and reversed (default 2)")
    parser.add_argument("--smoke", action="store_true", help="about 10 s in all: tiny windows, no Ultralytics (for CI)")
    parser.add_argument("--json", type=Path, help="where to write the results (default bench/results/latest.json)")
    parser.add_argument("--no-ultralytics", action="store_true", help="skip the Ultralytics comparison")
    parser.add_argument("--ultralytics-python", type=Path, help="python of the Ultralytics venv (default .venv-bench/bin/python)")
    parser.add_argument("--cv2-threads", type=int, help="cv2.setNumThreads for this process (experiments; default: OpenCV's own)")
    parser.add_argument("--mqtt-host", default=None)
    parser.add_argument("--mqtt-port", type=int, default=None)
    parser.add_argument("--soak-minutes", type=float, help="long run instead: the full appliance for N minutes")
    parser.add_argument("--cameras", type=int, default=4, help="cameras of the long run (default 4)")
    parser.add_argument("--soak-pacing", choices=("live", "fast"), default="live",
                        help="long run: cameras paced like live ones at the clip's rate (default) or read as fast as possible")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> BenchSettings:
    overrides: Dict[str, Any] = {}
    for name, key in (("model", "model_path"), ("batch_model", "batch_model_path"), ("seconds", "window_s"), ("rounds", "rounds"),
                      ("ultralytics_python", "ultralytics_python"), ("cv2_threads", "cv2_threads"),
                      ("mqtt_host", "mqtt_host"), ("mqtt_port", "mqtt_port")):
        value = getattr(args, name)
        if value is not None:
            overrides[key] = value
    if args.no_ultralytics:
        overrides["run_ultralytics"] = False
    return BenchSettings.for_smoke(**overrides) if args.smoke else BenchSettings(**overrides)


def _settings_dict(settings: BenchSettings) -> Dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(settings).items()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        logging.getLogger("edge_app").setLevel(logging.WARNING)
    settings = settings_from(args)
    if settings.cv2_threads is not None:
        import cv2

        cv2.setNumThreads(settings.cv2_threads)
    started = datetime.datetime.now(datetime.timezone.utc)
    header: Dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "command": "python -m bench.cpu run " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        "machine": describe_machine(),
        "settings": _settings_dict(settings),
    }
    if args.soak_minutes is not None:
        clip = ensure_clip(settings.images_dir, settings.work_dir, settings.clip_size_wh,
                           settings.clip_seconds_per_image, settings.clip_fps)
        batch = settings.batch_for_cameras(args.cameras)
        results: Dict[str, Any] = {"soak": run_soak(clip, args.cameras, settings.model_for_batch(batch), batch, args.soak_minutes,
                                                    settings.batch_timeout_ms, settings.mqtt_host, settings.mqtt_port,
                                                    realtime=args.soak_pacing == "live")}
        table = soak_markdown(results["soak"])
    else:
        results = run_benchmark(settings)
        table = markdown(results)
    finished = datetime.datetime.now(datetime.timezone.utc)
    header["load_average_end"] = list(os.getloadavg())
    document = {"meta": {**header, "duration_s": round((finished - started).total_seconds(), 1)}, **results,
                "table_markdown": table}
    out = args.json or settings.work_dir / ("soak.json" if args.soak_minutes is not None else "latest.json")
    write_results(out, document, collect(ONNXRUNTIME_CPU))
    print(table)
    print(f"results: {out} ({document['meta']['duration_s']} s)")
    return 0
