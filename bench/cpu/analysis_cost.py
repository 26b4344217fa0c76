"""What tracking, zones, lines and events cost the full pipeline: on / off, measured in one run.

    python -m bench.cpu analysis-cost [--cameras 1] [--rounds 2] [--seconds 20]

Runs the full appliance (section c of bench.cpu run: H.264 decode to MQTT on the local broker)
alternately with ``tracking.enabled`` off and on (events on MQTT, a zone and a line per camera
are not needed for the cost of the analysis itself: every tracked object goes through the zone
and line checks of its camera), in the order off, on, on, off, ... so drift on a shared machine
falls on both sides. Reports frames per second and the ratio on/off; the goal is that analysis
keeps at least 95 % of the frame rate (a ratio of 0.95 or more).
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from bench.common.full import measure_full
from bench.common.media import ensure_clip
from bench.cpu.settings import BenchSettings
from bench.common.provenance import ONNXRUNTIME_CPU, collect, write_results


def run(cameras: int, rounds: int, seconds: float, settings: BenchSettings) -> Dict[str, object]:
    clip = ensure_clip(settings.images_dir, settings.work_dir, settings.clip_size_wh,
                       settings.clip_seconds_per_image, settings.clip_fps)
    batch = settings.batch_for_cameras(cameras)
    fps: Dict[bool, List[float]] = {False: [], True: []}
    for index in range(rounds):
        for analysis in ((False, True) if index % 2 == 0 else (True, False)):
            result = measure_full(clip, cameras, settings.model_for_batch(batch), batch, seconds, settings.warmup_s,
                                  settings.batch_timeout_ms, settings.mqtt_host, settings.mqtt_port, analysis=analysis)
            if result.get("status") != "ok":
                return {"status": result.get("status"), "reason": result.get("reason")}
            fps[analysis].append(result["frames"] / result["usage"].wall_s)
            logging.info("analysis %s: %.2f frames/s", "on" if analysis else "off", fps[analysis][-1])
    off, on = statistics.mean(fps[False]), statistics.mean(fps[True])
    return {"status": "ok", "cameras": cameras, "rounds": rounds, "seconds": seconds,
            "fps_off": [round(v, 2) for v in fps[False]], "fps_on": [round(v, 2) for v in fps[True]],
            "ratio_on_off": round(on / off, 3) if off else None}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu analysis-cost", description=__doc__.splitlines()[0])
    parser.add_argument("--cameras", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("edge_app").setLevel(logging.WARNING)
    result = run(args.cameras, args.rounds, args.seconds, BenchSettings())
    text = json.dumps(result, indent=2)
    if args.json:
        write_results(args.json, result, collect(ONNXRUNTIME_CPU))
    print(text)
    return 0 if result.get("status") == "ok" else 1
