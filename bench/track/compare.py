"""Tracking quality and cost on synthetic scenes: edge-app's tracker against the reference ByteTrack.

    .venv-bench/bin/python -m bench.track                 # every scene, both trackers
    .venv/bin/python -m bench.track --no-reference        # ours only (the appliance's venv)

Both trackers get exactly the same detections, frame by frame. Each is scored with motmetrics
(IDF1, MOTA, ID switches; a match needs IoU >= 0.5 with the ground-truth box) on the boxes it
reports with a track id. The per-frame cost is the wall time of one step: building the
tracker's input from the frame's arrays, ``update``, and picking the tracked boxes.
The reference is ``trackers.ByteTrackTracker`` with its defaults and the scene's frame rate; it
needs opencv-python, so it lives only in ``.venv-bench`` (see bench/README.md).
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from bench.common.provenance import NO_MODEL, collect, write_results
from bench.track.scenes import SCENES, Frame, SceneSpec, generate
from edge_app.detect.detections import Detections
from edge_app.track import Tracker

log = logging.getLogger(__name__)

MIN_IOU = 0.5
# One frame in, (boxes, ids) of the tracked boxes out.
StepFn = Callable[[Frame, float], Tuple[np.ndarray, np.ndarray]]


@dataclass
class Score:
    tracker: str
    idf1: Optional[float]
    mota: Optional[float]
    id_switches: Optional[int]
    ms_per_frame: float
    p99_ms: float


@dataclass
class SceneResult:
    scene: str
    objects: int
    frames: int
    fps: float
    scores: List[Score]


def ours(spec: SceneSpec) -> StepFn:
    tracker = Tracker()

    def step(frame: Frame, t: float) -> Tuple[np.ndarray, np.ndarray]:
        dets = Detections(frame.det_boxes, frame.det_scores, frame.det_classes)
        ids = tracker.update(dets, t)
        keep = ids >= 0
        return frame.det_boxes[keep], ids[keep]
    return step


def reference(spec: SceneSpec, lost_s: Optional[float] = None) -> StepFn:
    import supervision as sv
    from trackers import ByteTrackTracker

    # lost_track_buffer counts frames at 30 fps whatever the frame rate (the package scales it).
    options = {} if lost_s is None else {"lost_track_buffer": int(round(lost_s * 30))}
    tracker = ByteTrackTracker(frame_rate=spec.fps, **options)

    def step(frame: Frame, t: float) -> Tuple[np.ndarray, np.ndarray]:
        dets = sv.Detections(xyxy=frame.det_boxes.astype(np.float32), confidence=frame.det_scores, class_id=frame.det_classes)
        result = tracker.update(dets)
        ids = np.asarray(result.tracker_id, dtype=np.int64)
        keep = ids >= 0
        return np.asarray(result.xyxy)[keep], ids[keep]
    return step


def iou_distances(gt: np.ndarray, hyp: np.ndarray) -> np.ndarray:
    """1 - IoU, NaN below ``MIN_IOU``: what motmetrics.distances.iou_matrix(max_iou=0.5) computes.

    Written out because that function calls ``np.asfarray``, which numpy 2 removed.
    """
    if gt.shape[0] == 0 or hyp.shape[0] == 0:
        return np.empty((gt.shape[0], hyp.shape[0]))
    ix = np.clip(np.minimum(gt[:, None, 2], hyp[None, :, 2]) - np.maximum(gt[:, None, 0], hyp[None, :, 0]), 0, None)
    iy = np.clip(np.minimum(gt[:, None, 3], hyp[None, :, 3]) - np.maximum(gt[:, None, 1], hyp[None, :, 1]), 0, None)
    inter = ix * iy
    area = lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])  # noqa: E731
    iou = inter / (area(gt)[:, None] + area(hyp)[None, :] - inter)
    return np.where(iou >= MIN_IOU, 1.0 - iou, np.nan)


def run_tracker(name: str, make: Callable[[SceneSpec], StepFn], spec: SceneSpec, frames: Sequence[Frame],
                score: bool = True, timing_repeats: int = 3) -> Score:
    """Score one pass over the scene, then time ``timing_repeats`` passes of a fresh tracker.

    Timing passes do nothing else between frames, so scoring work does not leak into them;
    the figure is the median pass's mean (a shared machine makes single passes noisy).
    """
    idf1 = mota = switches = None
    if score:
        import motmetrics as mm
        step = make(spec)
        acc = mm.MOTAccumulator(auto_id=True)
        for i, frame in enumerate(frames):
            boxes, ids = step(frame, i / spec.fps)
            acc.update(frame.gt_ids.tolist(), ids.tolist(), iou_distances(frame.gt_boxes, np.asarray(boxes, np.float64)))
        summary = mm.metrics.create().compute(acc, metrics=["idf1", "mota", "num_switches"], name=name)
        idf1, mota, switches = float(summary["idf1"].iloc[0]), float(summary["mota"].iloc[0]), int(summary["num_switches"].iloc[0])
    pass_means, all_ms = [], []
    for _ in range(max(timing_repeats, 1)):
        step = make(spec)
        times_ms = []
        for i, frame in enumerate(frames):
            start = time.perf_counter()
            step(frame, i / spec.fps)
            times_ms.append((time.perf_counter() - start) * 1000)
        pass_means.append(float(np.mean(times_ms)))
        all_ms += times_ms
    return Score(name, idf1, mota, switches, float(np.median(pass_means)), float(np.percentile(all_ms, 99)))


def run_scene(spec: SceneSpec, with_reference: bool = True, score: bool = True,
              reference_lost_s: Optional[float] = None, timing_repeats: int = 3) -> SceneResult:
    frames = generate(spec)
    scores = [run_tracker("edge-app", ours, spec, frames, score, timing_repeats)]
    if with_reference:
        scores.append(run_tracker("reference", lambda s: reference(s, reference_lost_s), spec, frames, score, timing_repeats))
    return SceneResult(spec.name, spec.objects, spec.frames, spec.fps, scores)


def _fmt(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(results: List[SceneResult]) -> str:
    lines = [
        "| scene | objects | frames (fps) | IDF1 ours / ref | MOTA ours / ref | ID switches ours / ref | ms/frame ours (p99) | ms/frame ref (p99) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        o = r.scores[0]
        ref = r.scores[1] if len(r.scores) > 1 else None
        lines.append(
            f"| {r.scene} | {r.objects} | {r.frames} ({r.fps:g}) "
            f"| {_fmt(o.idf1)} / {_fmt(ref.idf1) if ref else '-'} "
            f"| {_fmt(o.mota)} / {_fmt(ref.mota) if ref else '-'} "
            f"| {o.id_switches if o.id_switches is not None else '-'} / {ref.id_switches if ref else '-'} "
            f"| {o.ms_per_frame:.3f} ({o.p99_ms:.3f}) "
            f"| {f'{ref.ms_per_frame:.3f} ({ref.p99_ms:.3f})' if ref else '-'} |"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.track", description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="*", default=None, help="scene names (default: all)")
    parser.add_argument("--frames", type=int, default=None, help="override every scene's length")
    parser.add_argument("--no-reference", action="store_true", help="skip the trackers package's ByteTrack")
    parser.add_argument("--reference-lost-s", type=float, default=None,
                        help="the reference's lost-track buffer in seconds (default: its own, 1 s)")
    parser.add_argument("--timing-repeats", type=int, default=3, help="timed passes per tracker and scene (median reported)")
    parser.add_argument("--seed", type=int, default=0, help="added to every scene's seed: other draws of the same scenes")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    specs = [s for s in SCENES if args.scenes is None or s.name in args.scenes]
    if args.scenes and len(specs) != len(args.scenes):
        parser.error(f"unknown scene; known: {', '.join(s.name for s in SCENES)}")
    specs = [SceneSpec(**{**asdict(s), "frames": args.frames or s.frames, "seed": s.seed + args.seed}) for s in specs]
    try:
        import motmetrics  # noqa: F401
        score = True
    except ImportError:
        print("motmetrics is not installed: timing only", file=sys.stderr)
        score = False
    results = [run_scene(spec, not args.no_reference, score, args.reference_lost_s, args.timing_repeats) for spec in specs]
    print(table(results))
    if args.json:
        write_results(Path(args.json), {"scenes": [asdict(r) for r in results]}, collect(NO_MODEL))
    return 0
