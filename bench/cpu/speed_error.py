"""How far the speed of a line pair is from the truth, on a scene of known speed.

    python -m bench.cpu speed-error [--speeds 30,50,90] [--fps 5,10,25] [--phases 3] [--noise 4]
                                    [--model PATH] [--json PATH]

The bus of bus.jpg drives across a 1280x720 frame at each of ``--speeds`` (km/h, at 0.03 m per
pixel; ``bench.common.speed_scene``), seen at each of ``--fps`` frames a second, ``--phases``
times with the lines crossed at other points between two frames. Every frame goes through the
appliance's own parts: the real YOLOv8n (ONNX Runtime on the CPU), the tracker, the line counter
and the speed meter of ``CameraAnalysis.from_config``, with the pair configured as a user would
(``cameras[].lines[].speed``). Frame times are exact: the error is that of the boxes (their
jitter from frame to frame, the model's box edges moving as the object slides over the pixel
grid) and of timing a crossing between two frames; a camera's own capture-time jitter comes on
top (docs/analytics.md, "Speed").

Every object of the scene moves at the same speed, so every reading is a sample: the error in
per cent of the true speed, its mean (absolute and signed) and maximum, per frame rate and overall,
and the drives in which the bus had no reading.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from bench.common.detectors import load_detector
from bench.common.provenance import collect, engine_of, write_results
from bench.common.speed_scene import SpeedScene
from edge_app.config.file import parse_config
from edge_app.events.camera_analysis import CameraAnalysis
from testkit.paths import shared_dir

START_TS = 1_800_000_000.0


def _floats(text: str) -> List[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def drive(detector, scene: SpeedScene, speed_kmh: float, fps: float, phase_s: float) -> List[Dict[str, object]]:
    """The readings of one drive: label, measured km/h, error in per cent."""
    # Through the configuration's own checks, as a user's file goes (the pair is validated there).
    config = parse_config({"model": {"path": "unused.onnx"}, "events": {"snapshots": False},
                           "cameras": [{"id": "road", "source": "test://bars", "lines": scene.lines()}]})
    analysis = CameraAnalysis.from_config(config.cameras[0], config.events)
    readings = []
    for frame_id, (t_s, frame) in enumerate(scene.frames(speed_kmh, fps, phase_s), start=1):
        detections = detector.detect([frame])[0]
        result = analysis.process(frame_id, START_TS + t_s, frame, detections)
        for crossing in result.crossings:
            if crossing.speed is not None:
                kmh = crossing.speed.speed_kmh
                readings.append({"label": crossing.label, "speed_kmh": round(kmh, 2),
                                 "error_percent": round(100.0 * (kmh - speed_kmh) / speed_kmh, 2)})
    return readings


def _summary(errors: Sequence[float]) -> Dict[str, Optional[float]]:
    if not errors:
        return {"readings": 0, "mean_abs_error_percent": None, "mean_error_percent": None, "max_abs_error_percent": None}
    return {"readings": len(errors),
            "mean_abs_error_percent": round(statistics.fmean(abs(e) for e in errors), 2),
            "mean_error_percent": round(statistics.fmean(errors), 2),
            "max_abs_error_percent": round(max(abs(e) for e in errors), 2)}


def run(model: Path, picture: Path, speeds: Sequence[float], rates: Sequence[float], phases: int,
        noise_sigma: float) -> Dict[str, object]:
    detector = load_detector(model, 1)
    scene = SpeedScene(picture, noise_sigma=noise_sigma)
    drives, by_fps = [], {}
    for fps in rates:
        errors: List[float] = []
        for speed_kmh in speeds:
            for phase in range(phases):
                phase_s = phase / phases / fps
                readings = drive(detector, scene, speed_kmh, fps, phase_s)
                drives.append({"fps": fps, "speed_kmh": speed_kmh, "phase_s": round(phase_s, 4), "readings": readings,
                               "bus_measured": any(r["label"] == "bus" for r in readings)})
                errors += [float(r["error_percent"]) for r in readings]
                print(f"{fps:5.1f} fps {speed_kmh:5.1f} km/h phase {phase}: "
                      + (", ".join(f"{r['label']} {r['speed_kmh']}" for r in readings) or "no reading"), flush=True)
        by_fps[str(fps)] = _summary(errors)
    all_errors = [float(r["error_percent"]) for d in drives for r in d["readings"]]
    return {
        "scene": {"frame": f"{scene.size[0]}x{scene.size[1]}", "metres_per_px": scene.metres_per_px,
                  "distance_m": round(scene.distance_m, 3), "lines_x": [scene.first_line_x, scene.second_line_x],
                  "object": "the bus of bus.jpg (people in front), scaled 0.5", "noise_sigma": noise_sigma,
                  "frame_times": "exact (no capture jitter)"},
        "speeds_kmh": list(speeds), "fps": list(rates), "phases": phases,
        "overall": _summary(all_errors),
        "by_fps": by_fps,
        "drives_without_bus_reading": sum(1 for d in drives if not d["bus_measured"]),
        "drives": drives,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu speed-error", description=__doc__.split("\n\n")[0])
    parser.add_argument("--speeds", default="30,50,90", help="true speeds in km/h, comma-separated")
    parser.add_argument("--fps", default="5,10,25", help="analysed frames a second, comma-separated")
    parser.add_argument("--phases", type=int, default=3, help="drives per speed and rate, shifted between frames")
    parser.add_argument("--noise", type=float, default=4.0, help="sensor noise, grey levels")
    parser.add_argument("--model", type=Path, default=shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx")
    parser.add_argument("--json", type=Path, help="write the results (with provenance) here")
    args = parser.parse_args(argv)
    if args.phases < 1:
        parser.error("--phases must be >= 1")
    result = run(args.model, shared_dir() / "images" / "bus.jpg", _floats(args.speeds), _floats(args.fps),
                 args.phases, args.noise)
    overall = result["overall"]
    print(f"overall: {overall}")
    for fps, summary in result["by_fps"].items():
        print(f"{fps} fps: {summary}")
    if args.json:
        write_results(args.json, result, collect(engine_of(args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
