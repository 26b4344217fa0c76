"""The appliance's work after the model, without the model: CPU µs per analysed frame, against other commits in one run.

    python -m bench.cpu post-model [--cameras 8] [--frames 60] [--step 3] [--repeats 3] [--lanes 2]
                                   [--rounds 2] [--tracker-processes auto] [--against COMMIT ...]
                                   [--profile] [--json OUT]

On an accelerator the model is not what limits the appliance: the Python work each analysed
frame costs in the appliance's process (tracking, zones and lines, events, snapshots, the MQTT
messages and the status figures) is, as it all shares one interpreter lock
(docs/gpu-benchmark.md). This command measures that part alone, on any machine: ``--frames``
frames of the camera-like scene of ``bench.cpu.camera_scene`` (every ``--step``-th frame of the
1080p30 clip, so 10 analysed frames a second by default: a bus and four people walking), and the
detections the shared YOLOv8n model (ONNX Runtime) finds in them, recorded once. Then
``bench/cpu/post_model_worker.py`` hands them to the appliance's own objects after the model
(``ResultStore``, ``AnalysisHub``, the event store, a real ``MqttPublisher`` on the local broker)
through the pipeline's ``CameraLanes``, ``--cameras`` cameras with a zone and a line each (the
configuration of ``bench.cpu cameras``), the scene ``--repeats`` times.

Each tree runs in its own process: this checkout, and the ``edge_app`` of every ``--against``
commit (``git archive``). The trees take turns, in reverse order every other round; each
figure is the best of the rounds. Ratios are each ``--against`` commit's CPU time per frame over
this checkout's (above 1: this checkout is cheaper). ``--profile`` runs this checkout once
on one thread under cProfile and adds the functions that hold the most time.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from bench.common.appliance_run import bench_config
from bench.common.detectors import load_detector
from bench.common.provenance import collect, engine_of, write_results
from bench.cpu.analysis_path import unpack
from bench.cpu.camera_scene import ensure_camera_scene
from bench.cpu.settings import BenchSettings
from testkit.paths import REPO

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("post_model_worker.py")
HERE = "this checkout"
WORKER_TIMEOUT_S = 900.0


def record_scene(clip: Path, frames: int, step: int, model: Path, out_dir: Path) -> Tuple[Path, Path, List[str]]:
    """Every ``step``-th frame of ``clip`` (``frames`` of them) as one ``.npy``, and the model's detections in them."""
    import cv2  # the opencv extra: bench only

    capture = cv2.VideoCapture(str(clip))
    images: List[np.ndarray] = []
    index = 0
    while len(images) < frames:
        ok, image = capture.read()
        if not ok:
            break
        if index % step == 0:
            images.append(image)
        index += 1
    capture.release()
    if not images:
        raise RuntimeError(f"no frames could be read from {clip}")
    detector = load_detector(model, 1)
    found = [detector.detect([image])[0] for image in images]
    offsets = np.cumsum([0] + [len(d) for d in found])
    frames_path, detections_path = out_dir / "frames.npy", out_dir / "detections.npz"
    np.save(frames_path, np.stack(images))
    np.savez(detections_path, offsets=offsets,
             xyxy=np.concatenate([d.xyxy for d in found]).reshape(-1, 4),
             confidence=np.concatenate([d.confidence for d in found]),
             class_id=np.concatenate([d.class_id for d in found]))
    return frames_path, detections_path, list(detector.labels)


def measure(tree: Path, spec: Dict[str, Any]) -> Dict[str, Any]:
    done = subprocess.run([sys.executable, str(WORKER), json.dumps(spec)], cwd=str(tree), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1",
                               "OPENBLAS_NUM_THREADS": "1"}, timeout=WORKER_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"the worker failed in {tree}: {done.stderr[-3000:]}")
    result = json.loads(done.stdout)
    if result.get("status") == "ok" and not Path(result["edge_app"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"the worker imported {result['edge_app']}, not the tree {tree}")
    return result


def run(args: argparse.Namespace, settings: BenchSettings) -> Dict[str, Any]:
    clip = Path(args.clip) if args.clip else ensure_camera_scene(settings.work_dir)
    config = bench_config(clip, args.cameras, settings.model_path, 8, 5.0, settings.mqtt_host, settings.mqtt_port,
                          counting=True)
    with tempfile.TemporaryDirectory(prefix="post-model-") as temp:
        frames_path, detections_path, labels = record_scene(clip, args.frames, args.step, settings.model_path, Path(temp))
        document = config.model_dump(mode="json")
        document["tracking"]["processes"] = args.tracker_processes if args.tracker_processes == "auto" \
            else int(args.tracker_processes)
        spec = {"frames": str(frames_path), "detections": str(detections_path), "labels": labels,
                "config": document, "fps": 30.0 / args.step, "repeats": args.repeats,
                "lanes": args.lanes}
        trees = [(HERE, REPO)] + [(commit, unpack(commit, Path(temp))) for commit in args.against]
        best: Dict[str, Dict[str, Any]] = {}
        for index in range(args.rounds):
            for name, tree in (trees if index % 2 == 0 else trees[::-1]):
                result = measure(tree, spec)
                if result.get("status") != "ok":
                    return {"status": result.get("status"), "reason": result.get("reason")}
                log.info("%s: %s", name, {k: v for k, v in result.items() if k != "edge_app"})
                if name not in best or result["cpu_us_per_frame"] < best[name]["cpu_us_per_frame"]:
                    best[name] = result
        profile = measure(REPO, {**spec, "profile": True, "repeats": 1})["profile"] if args.profile else None
    here = best[HERE]["cpu_us_per_frame"]
    out: Dict[str, Any] = {
        "status": "ok", "clip": clip.name, "cameras": args.cameras, "scene_frames": args.frames, "step": args.step,
        "analysed_fps_per_camera": 30.0 / args.step, "repeats": args.repeats, "lanes": args.lanes,
        "rounds": args.rounds, "against": list(args.against),
        "trees": {name: {k: v for k, v in r.items() if k not in ("edge_app", "status")} for name, r in best.items()},
        "ratios": {commit: round(best[commit]["cpu_us_per_frame"] / here, 2) for commit in args.against},
    }
    if profile is not None:
        out["profile"] = profile
    return out


def markdown(result: Dict[str, Any]) -> str:
    lines = ["| tree | tracker processes | CPU µs per frame: all / appliance process | wall µs per frame | events "
             "| stages (ms per frame) |", "|---|---|---|---|---|---|"]
    for name, tree in result["trees"].items():
        stages = ", ".join(f"{k} {v}" for k, v in tree["stage_ms"].items())
        lines.append(f"| {name[:10] if name != HERE else name} | {tree.get('tracker_processes', 0)} "
                     f"| {tree['cpu_us_per_frame']} / {tree.get('appliance_process_cpu_us_per_frame')} "
                     f"| {tree['wall_us_per_frame']} | {tree['events']} | {stages} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu post-model", description=__doc__.splitlines()[0])
    parser.add_argument("--cameras", type=int, default=8)
    parser.add_argument("--frames", type=int, default=60, help="frames of the scene recorded (each 6 MB in memory)")
    parser.add_argument("--step", type=int, default=3, help="every step-th frame of the 30 fps clip")
    parser.add_argument("--repeats", type=int, default=3, help="passes over the recorded frames")
    parser.add_argument("--lanes", type=int, default=2, help="result lanes (the pipeline's default: half the cores, 1-4)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tracker-processes", default="auto",
                        help="tracking.processes of this checkout (auto, or 0-16); earlier commits have no such key")
    parser.add_argument("--against", nargs="*", default=[], help="commits to measure in the same run")
    parser.add_argument("--clip", help="another clip than the camera-like scene")
    parser.add_argument("--profile", action="store_true", help="add a cProfile of this checkout, on one thread")
    parser.add_argument("--json", type=Path, help="where to write the results (default bench/results/post-model.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    settings = BenchSettings()
    provenance = collect(engine_of(settings.model_path))
    result = run(args, settings)
    if result.get("status") != "ok":
        print(json.dumps(result))
        return 1
    out = args.json or REPO / "bench" / "results" / "post-model.json"
    write_results(out, {**result, "table_markdown": markdown(result)}, provenance)
    print(markdown(result))
    return 0
