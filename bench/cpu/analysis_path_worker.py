"""One tree's analysis path on a synthetic scene: CPU µs per frame of zones and lines, and of the whole
``CameraAnalysis.process`` (the process's CPU time, so other work on a shared machine counts less). Run as a script by ``bench.cpu.analysis_path`` with ``PYTHONPATH`` set to
the tree measured (this checkout, or another commit's ``edge_app`` unpacked beside it), so it imports
nothing but ``edge_app`` and numpy and calls only what every measured commit has.

    python bench/cpu/analysis_path_worker.py '{"objects": 10, "areas": "one", "frames": 300, "repeats": 5}'

prints one JSON object.
"""
from __future__ import annotations

import inspect
import json
import sys
import time
from typing import Any, Dict, List, Tuple

import numpy as np

import edge_app
from edge_app.detect.detections import Detections
from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis
from edge_app.events.snapshots import SnapshotSettings
from edge_app.track.lines import Line, LineCounter
from edge_app.track.zones import Zone, ZoneTracker

FRAME_WH = (1920, 1080)
FPS = 10.0
LABELS = ("person", "bicycle", "car")
#: "one": the zone and line each camera of ``bench.cpu cameras`` has; "three": three of each, two
#: with label filters (tests/track/test_areas_against_reference.py)
AREAS = {
    "one": ([Zone("left", ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)))],
            [Line("middle", (0.5, 0.0), (0.5, 1.0))]),
    "three": ([Zone("left", ((0, 0), (0.5, 0), (0.5, 1), (0, 1))),
               Zone("cars", ((0.2, 0.2), (0.8, 0.2), (0.8, 0.8), (0.2, 0.8)), frozenset({"car"})),
               Zone("triangle", ((0.1, 0.9), (0.9, 0.9), (0.5, 0.1)))],
              [Line("middle", (0.5, 0.0), (0.5, 1.0)), Line("short", (0.3, 0.3), (0.7, 0.4), frozenset({"person"})),
               Line("floor", (0.0, 0.7), (1.0, 0.7))]),
}

Frame = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, List[int]]  # ids, classes, boxes, scores, removed


def scene(objects: int, frames: int, seed: int = 7) -> List[Frame]:
    """About ``objects`` walkers in view at once, each for 4-12 s, some briefly missed, a few false
    detections per frame: ground-truth ids, classes, boxes (pixels), scores, ids gone this frame."""
    rng = np.random.default_rng(seed)
    w, h = FRAME_WH
    live: Dict[int, list] = {}  # id -> [class, centre, velocity px/frame, size, frames left]
    next_id, out = 1, []
    for _ in range(frames):
        removed = [t for t, o in live.items() if o[4] <= 0]
        for t in removed:
            del live[t]
        while len(live) < objects:
            cls = int(rng.choice([0, 0, 0, 1, 2]))
            size = np.array([60.0, 160.0]) if cls != 2 else np.array([220.0, 120.0])
            live[next_id] = [cls, rng.random(2) * (w, h), rng.normal(0, 8, 2), size * rng.uniform(0.7, 1.3),
                             int(rng.integers(40, 120))]
            next_id += 1
        ids, classes, boxes, scores = [], [], [], []
        for t, o in live.items():
            o[1] = np.clip(o[1] + o[2] + rng.normal(0, 1.5, 2), 0, (w, h))
            o[4] -= 1
            if rng.random() < 0.95:
                ids.append(t)
                classes.append(o[0])
                boxes.append(np.concatenate([o[1] - o[3] / 2, o[1] + o[3] / 2]))
                scores.append(rng.uniform(0.55, 0.95))
        for _ in range(int(rng.integers(0, 3))):  # low-score clutter: no track
            corner = rng.random(2) * (w, h)
            ids.append(-1)
            classes.append(0)
            boxes.append(np.concatenate([corner, corner + 50]))
            scores.append(rng.uniform(0.2, 0.45))
        order = rng.permutation(len(ids))
        out.append((np.asarray(ids, np.int64)[order], np.asarray(classes, np.int32)[order],
                    np.asarray(boxes, np.float32).reshape(-1, 4)[order], np.asarray(scores, np.float32)[order], removed))
    return out


def areas_us(frames: List[Frame], areas: str, repeats: int) -> float:
    """Best of ``repeats`` of the mean µs per frame of zones and lines (update, then forget the ended)."""
    zones, lines = AREAS[areas]
    timed = "ts_s" in inspect.signature(ZoneTracker.update).parameters
    # lines take the frame time since crossings carry when they passed over (LineCrossing.over_s)
    lines_timed = "ts" in inspect.signature(LineCounter.update).parameters
    inputs = []
    for index, (ids, classes, boxes, _, removed) in enumerate(frames):
        labels = [LABELS[c] for c in classes.tolist()]
        points = np.stack([(boxes[:, 0] + boxes[:, 2]) / 2 / FRAME_WH[0], boxes[:, 3] / FRAME_WH[1]], axis=1)
        inputs.append((ids, labels, np.clip(points, 1e-9, 1 - 1e-9).astype(np.float64), removed, index / FPS))
    best = float("inf")
    for _ in range(repeats):
        zone_tracker, counter = ZoneTracker(list(zones)), LineCounter(list(lines))
        started = time.process_time()
        for ids, labels, points, removed, ts in inputs:
            if timed:
                zone_tracker.update(ids, labels, points, ts)
            else:
                zone_tracker.update(ids, labels, points)
            zone_tracker.forget(removed)
            if lines_timed:
                counter.update(ids, labels, points, ts)
            else:
                counter.update(ids, labels, points)
            counter.forget(removed)
            zone_tracker.occupants()
        best = min(best, (time.process_time() - started) / len(inputs))
    return best * 1e6


def analysis_us(frames: List[Frame], areas: str, repeats: int) -> Dict[str, float]:
    """Best of ``repeats`` of the mean µs per frame of ``CameraAnalysis.process`` (tracking,
    zones, lines, events, counts; no image, so no snapshot), and its stages where it times them."""
    zones, lines = AREAS[areas]
    names = list(LABELS)
    detections = [Detections(boxes, scores, classes, names) for _, classes, boxes, scores, _ in frames]
    best: Dict[str, float] = {"total": float("inf")}
    for _ in range(repeats):
        analysis = CameraAnalysis("cam", AnalysisSettings(snapshots=SnapshotSettings(enabled=False)), zones, lines)
        started = time.process_time()
        events = 0
        for index, dets in enumerate(detections):
            events += len(analysis.process(index, 1_800_000_000.0 + index / FPS, None, dets, FRAME_WH).events)
        total = (time.process_time() - started) / len(detections) * 1e6
        if total < best["total"]:
            best = {"total": total, "event_messages": events}
            stage_times = getattr(analysis, "stage_times", None)
            if stage_times is not None:
                best.update({f"{stage}": ms * 1000.0 for stage, ms in stage_times.mean_ms().items()})
    return {key: round(value, 1) for key, value in best.items()}


def main() -> int:
    spec: Dict[str, Any] = json.loads(sys.argv[1])
    frames = scene(int(spec["objects"]), int(spec.get("frames", 300)))
    detected = sum(int((f[0] >= 0).sum()) for f in frames) / len(frames)
    print(json.dumps({
        "edge_app": edge_app.__file__,
        "tracked_per_frame": round(detected, 1),
        "areas_us": round(areas_us(frames, spec["areas"], int(spec.get("repeats", 5))), 1),
        "analysis_us": analysis_us(frames, spec["areas"], int(spec.get("repeats", 5))),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
