"""What dwell, loitering and the zone figures cost one camera's analysis, per analysed frame.

    python -m bench.track.dwell_cost [--objects 40] [--zones 4] [--frames 600] [--rounds 3] [--json out.json]

Feeds ``CameraAnalysis`` (tracking, zones, events; no model, no image) a synthetic scene of
``--objects`` people standing in a grid across the frame and drifting a little, so every one is
tracked and most are inside one of ``--zones`` vertical zones for the whole run, at 10 frames a
second of capture time. Alternates rounds with plain zones and with every zone setting
``loitering_s`` (reached in the first seconds, so the loitering events are open) and
``max_objects``, in the order plain, rules, rules, plain, ... so drift on a shared machine falls
on both sides, and reports the median milliseconds per frame of each. Dwell itself (every
event's ``dwell_s``, the zones' mean dwell) runs in both: it has no switch.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from bench.common.provenance import NO_MODEL, collect, write_results
from edge_app.detect.detections import Detections
from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis, ZoneRules
from edge_app.track import Zone

WIDTH, HEIGHT = 1920, 1080
FPS = 10.0
T0 = 1_800_000_000.0
LABELS = ("person",)


def scene(objects: int, frames: int, seed: int = 1) -> List[Detections]:
    """People on a grid, each drifting a few pixels a frame around its place: every one tracked."""
    rng = np.random.default_rng(seed)
    columns = int(np.ceil(np.sqrt(objects * WIDTH / HEIGHT)))
    places = np.array([((i % columns + 0.5) * WIDTH / columns, (i // columns + 0.5) * HEIGHT / np.ceil(objects / columns))
                       for i in range(objects)])
    w, h = 0.5 * WIDTH / columns, 0.8 * HEIGHT / np.ceil(objects / columns)
    out = []
    for _ in range(frames):
        centres = places + rng.normal(0, 2.0, places.shape)
        boxes = np.column_stack([centres[:, 0] - w / 2, centres[:, 1] - h / 2, centres[:, 0] + w / 2, centres[:, 1] + h / 2])
        out.append(Detections(boxes.astype(np.float32), np.full(objects, 0.9, np.float32), np.zeros(objects, np.int32), LABELS))
    return out


def zones(count: int) -> List[Zone]:
    return [Zone(f"z{i}", ((i / count, 0.0), ((i + 1) / count, 0.0), ((i + 1) / count, 1.0), (i / count, 1.0)),
                 frozenset({"person"})) for i in range(count)]


def ms_per_frame(frames: List[Detections], areas: List[Zone], rules: ZoneRules) -> float:
    analysis = CameraAnalysis("bench", AnalysisSettings(), zones=areas, rules=rules)
    started = time.perf_counter()
    for index, detections in enumerate(frames):
        analysis.process(index + 1, T0 + index / FPS, None, detections, (WIDTH, HEIGHT))
    return (time.perf_counter() - started) * 1000.0 / len(frames)


def run(objects: int, zone_count: int, frames: int, rounds: int) -> Dict[str, object]:
    data, areas = scene(objects, frames), zones(zone_count)
    with_rules = ZoneRules({z.name: 2.0 for z in areas}, {z.name: 1 for z in areas})
    times: Dict[str, List[float]] = {"plain": [], "rules": []}
    for index in range(rounds):
        for kind in (("plain", "rules") if index % 2 == 0 else ("rules", "plain")):
            times[kind].append(ms_per_frame(data, areas, with_rules if kind == "rules" else ZoneRules()))
    plain, ruled = statistics.median(times["plain"]), statistics.median(times["rules"])
    return {"objects": objects, "zones": zone_count, "frames": frames, "rounds": rounds,
            "ms_per_frame_plain": round(plain, 3), "ms_per_frame_rules": round(ruled, 3),
            "rules_extra_ms_per_frame": round(ruled - plain, 3),
            "plain_runs_ms": [round(v, 3) for v in times["plain"]], "rules_runs_ms": [round(v, 3) for v in times["rules"]]}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.track.dwell_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=40)
    parser.add_argument("--zones", type=int, default=4)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(args.objects, args.zones, args.frames, args.rounds)
    if args.json:
        write_results(args.json, result, collect(NO_MODEL, argv))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
