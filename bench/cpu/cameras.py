"""Eight cameras of a camera-like scene through the whole appliance, as a user runs it: where a frame's time goes.

    python -m bench.cpu cameras [--cameras 8] [--seconds 20] [--rounds 1] [--clip PATH]
                                [--no-counting] [--tracking off] [--py-spy PATH] [--json OUT]

The real Appliance (H.264 decode to MQTT on the local broker, bench.common.full) with its
defaults: tracking and events on, snapshots on, every analysed frame published. The clip is the
camera-like scene of ``bench.cpu.camera_scene`` (a bus and four people walking through a
panning, noisy 1080p30 view at 4 Mbit/s), read as fast as the pipeline takes frames, on every
camera. With counting on (the default) each camera also has a zone and a line, so every track
goes through the zone and line checks. Reports frames per second, CPU ms per analysed frame
(the process and its decoder processes), capture to subscriber latency, and the mean time per
frame of each stage as ``edge_app_stage_seconds`` counts it (docs/metrics.md).

``--py-spy`` samples the appliance's threads with py-spy (a path to its program; not a
dependency of the project) over the measuring window and adds the functions that hold the most
samples, by own time and by time below them.
"""
from __future__ import annotations

import argparse
import collections
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from bench.common.figures import percentiles_ms
from bench.common.full import measure_full
from bench.common.provenance import ONNXRUNTIME_CPU, collect, write_results
from bench.cpu.camera_scene import SceneSettings, ensure_camera_scene
from bench.cpu.settings import BenchSettings

log = logging.getLogger(__name__)

TOP_FUNCTIONS = 25


class PySpy:
    """py-spy recording this process for ``seconds``, started when the window starts."""

    def __init__(self, program: Path, seconds: float, out: Path) -> None:
        self._program, self._seconds, self._out = program, seconds, out
        self._process: Optional[subprocess.Popen] = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [str(self._program), "record", "--pid", str(os.getpid()), "--duration", str(int(round(self._seconds))),
             "--rate", "200", "--format", "raw", "--nonblocking", "--threads", "-o", str(self._out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def summary(self) -> Dict[str, Any]:
        if self._process is None:
            return {"status": "not started"}
        _, err = self._process.communicate(timeout=self._seconds + 60)
        if self._process.returncode != 0 or not self._out.exists():
            return {"status": "failed", "reason": err.decode(errors="replace")[-500:]}
        return summarise_stacks(self._out.read_text().splitlines())


def summarise_stacks(lines: Sequence[str]) -> Dict[str, Any]:
    """From py-spy's raw (collapsed) stacks: the busiest threads and functions."""
    own: Dict[str, int] = collections.Counter()
    below: Dict[str, int] = collections.Counter()
    threads: Dict[str, int] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        threads[_thread_name(frames[0])] += count
        names = [_function(f) for f in frames[1:]]
        if names:
            own[names[-1]] += count
        for name in set(names):
            below[name] += count
    share = (lambda n: round(100.0 * n / total, 1)) if total else (lambda n: 0.0)
    return {
        "status": "ok",
        "samples": total,
        "threads_percent": {name: share(n) for name, n in threads.most_common(15)},
        "own_percent": {name: share(n) for name, n in own.most_common(TOP_FUNCTIONS)},
        "inclusive_percent": {name: share(n) for name, n in below.most_common(TOP_FUNCTIONS)},
    }


def _thread_name(frame: str) -> str:
    # 'thread (0x7F...)' or 'process 123:"python ..."': the thread's own name is not in raw output
    return frame.split(" (")[0]


def _function(frame: str) -> str:
    # "function (path/to/file.py:line)": keep the function and the file, not the line
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({'/'.join(path.split('/')[-2:])})"


def run(cameras: int, seconds: float, rounds: int, clip: Path, counting: bool, tracking: bool,
        settings: BenchSettings, py_spy: Optional[Path] = None, work_dir: Optional[Path] = None) -> Dict[str, Any]:
    batch = max(1, min(cameras, 8))
    model = settings.model_for_batch(batch)
    windows: List[Dict[str, Any]] = []
    profile: Optional[Dict[str, Any]] = None
    for index in range(rounds):
        spy = None
        if py_spy is not None and index == rounds - 1:
            spy = PySpy(py_spy, seconds, Path(work_dir or settings.work_dir) / "cameras-py-spy.txt")
        result = measure_full(clip, cameras, model, batch, seconds, settings.warmup_s, settings.batch_timeout_ms,
                              settings.mqtt_host, settings.mqtt_port, analysis=tracking, counting=counting,
                              on_window_start=spy.start if spy is not None else None)
        if result.get("status") != "ok":
            return {"status": result.get("status"), "reason": result.get("reason")}
        if spy is not None:
            profile = spy.summary()
        windows.append(result)
    frames = sum(w["frames"] for w in windows)
    wall_s = sum(w["usage"].wall_s for w in windows)
    cpu_s = sum(w["usage"].cpu_s for w in windows)
    stage_ms = _mean_of([w["stage_ms"] for w in windows], [w["frames"] for w in windows])
    out: Dict[str, Any] = {
        "status": "ok",
        "clip": clip.name,
        "cameras": cameras,
        "batch": batch,
        "model": model.name,
        "tracking_events": tracking,
        "counting": counting,
        "rounds": rounds,
        "seconds": seconds,
        "frames": frames,
        "fps": round(frames / wall_s, 2) if wall_s else 0.0,
        "cpu_ms_per_frame": round(cpu_s * 1000.0 / frames, 2) if frames else None,
        "cpu_percent": round(100.0 * cpu_s / wall_s, 1) if wall_s else None,
        "latency_ms": percentiles_ms([v for w in windows for v in w["latencies_ms"]]),
        "delivered_ms": percentiles_ms([v for w in windows for v in w["delivered_ms"]]),
        "stage_ms": stage_ms,
        "thread_cpu_ms_per_frame": windows[-1]["usage"].per_frame_ms(windows[-1]["frames"]),
        "per_camera_frames": windows[-1]["per_camera_frames"],
        "errors": windows[-1]["errors"],
    }
    if profile is not None:
        out["py_spy"] = profile
    return out


def _mean_of(per_window: List[Dict[str, float]], frames: List[int]) -> Dict[str, float]:
    """Frame-weighted mean of each stage's ms per frame over the windows."""
    total = sum(frames)
    stages: Dict[str, float] = {}
    for means, n in zip(per_window, frames):
        for stage, ms in means.items():
            stages[stage] = stages.get(stage, 0.0) + ms * n / total
    return {stage: round(ms, 4) for stage, ms in stages.items()}


def markdown(result: Dict[str, Any]) -> str:
    if result.get("status") != "ok":
        return f"not measured: {result.get('reason')}"
    lines = [f"{result['cameras']} cameras of {result['clip']}, batch {result['batch']}, tracking and events "
             f"{'on' if result['tracking_events'] else 'off'}, counting {'on' if result['counting'] else 'off'}",
             "", "| frames/s | CPU ms per frame | CPU % | capture to subscriber p50 / p99 ms |", "|---|---|---|---|",
             f"| {result['fps']} | {result['cpu_ms_per_frame']} | {result['cpu_percent']} | "
             f"{result['delivered_ms'].get('p50')} / {result['delivered_ms'].get('p99')} |",
             "", "| stage | ms per frame |", "|---|---|"]
    lines += [f"| {stage} | {ms} |" for stage, ms in result["stage_ms"].items()]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu cameras", description=__doc__.splitlines()[0])
    parser.add_argument("--cameras", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0, help="measuring window of each round (default 20)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--clip", type=Path, help="default: the camera-like scene (bench.cpu.camera_scene), made once")
    parser.add_argument("--no-counting", action="store_true", help="no zone and line per camera")
    parser.add_argument("--tracking", choices=("on", "off"), default="on", help="tracking and events (default on, as configured by default)")
    parser.add_argument("--py-spy", type=Path, help="py-spy program: sample the appliance's threads over the last window")
    parser.add_argument("--json", type=Path, help="where to write the results (default bench/results/cameras.json)")
    parser.add_argument("--mqtt-host", default="127.0.0.1")
    parser.add_argument("--mqtt-port", type=int, default=1883)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("edge_app").setLevel(logging.WARNING)
    provenance = collect(ONNXRUNTIME_CPU)
    settings = BenchSettings(mqtt_host=args.mqtt_host, mqtt_port=args.mqtt_port)
    clip = args.clip or ensure_camera_scene(settings.work_dir, SceneSettings())
    result = run(args.cameras, args.seconds, args.rounds, clip, not args.no_counting, args.tracking == "on", settings,
                 py_spy=args.py_spy)
    out = args.json or settings.work_dir / "cameras.json"
    write_results(out, {**result, "table_markdown": markdown(result)}, provenance)
    print(markdown(result))
    if "py_spy" in result:
        print(result["py_spy"])
    return 0 if result.get("status") == "ok" else 1
