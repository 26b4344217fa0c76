"""What an open live-grid tile costs the appliance: CPU milliseconds and bytes per tile per second.

    python -m bench.cpu live-tiles [--cameras 4] [--seconds 20] [--rounds 3] [--width 1280] [--height 720] [--fps 10]
                                   [--detect] [--json PATH]

A real ``edge-app run`` with ``--cameras`` moving-box cameras (``test://box``) of the given size
and rate. Its process CPU time (``/proc/<pid>/stat``: every thread) is read over ``--seconds`` with
no client, then over as long with one tile per camera open, each asking as the page's tile does
(``edge_app/api/static/livegrid.js``): ``snapshot.jpg?annotate=1&quality=60``, one request at a
time, the next ``TILE_MS`` after the answer. ``--rounds`` such pairs alternate; the median of their
differences, per tile and per second, is what a tile costs; the bytes are the JPEG bodies the
tiles received.

Without ``--detect`` the cameras do not detect, so the figure is the tile's alone (the model's CPU
time varies more between windows than a tile costs); with it, the tiles get analysed frames with
boxes drawn and the model runs too (YOLOv8n on ONNX Runtime, the shared model).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import requests

from bench.common.provenance import NO_MODEL, ONNXRUNTIME_CPU, collect, write_results

#: as the page's tile asks (livegrid.js: TILE_MS, QUALITY)
TILE_MS = 333
QUALITY = 60
TOKEN = "live-tiles-bench-token-0123456789"


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class TileCounts:
    pictures: int = 0
    bytes: int = 0
    failures: int = 0


def _tile(url: str, stop: threading.Event, counts: TileCounts) -> None:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {TOKEN}"
    while not stop.is_set():
        try:
            answer = session.get(url, timeout=10)
        except requests.RequestException:
            counts.failures += 1
        else:
            if answer.status_code == 200:
                counts.pictures += 1
                counts.bytes += len(answer.content)
            else:
                counts.failures += 1
        stop.wait(TILE_MS / 1000.0)
    session.close()


def _window_cpu_s(pid: int, seconds: float) -> float:
    before = _cpu_s(pid)
    time.sleep(seconds)
    return _cpu_s(pid) - before


def _tiles_window(app, ids: List[str], seconds: float) -> Tuple[float, List[TileCounts]]:
    """(appliance CPU seconds, what each tile got) over ``seconds`` with one tile per camera open."""
    stop, counts = threading.Event(), [TileCounts() for _ in ids]
    tiles = [threading.Thread(target=_tile, args=(f"{app.base_url}/api/v1/cameras/{cid}/snapshot.jpg"
                                                  f"?annotate=1&quality={QUALITY}", stop, count), daemon=True)
             for cid, count in zip(ids, counts)]
    for tile in tiles:
        tile.start()
    time.sleep(1.0)  # every tile has had its first answer
    for count in counts:
        count.pictures = count.bytes = 0
    cpu_s = _window_cpu_s(app.proc.pid, seconds)
    measured = [TileCounts(c.pictures, c.bytes, c.failures) for c in counts]
    stop.set()
    for tile in tiles:
        tile.join(15)
    return cpu_s, measured


def measure(cameras: int, seconds: float, rounds: int, width: int, height: int, fps: float, detect: bool,
            work_dir: Path) -> Dict[str, Any]:
    from testkit.appliance import ApplianceProcess
    from testkit.net import free_port
    from testkit.paths import shared_dir
    from testkit.waiting import wait_until

    ids = [f"cam{n}" for n in range(cameras)]
    config = {"device_id": "live-tiles",
              "cameras": [{"id": cid, "source": f"test://box?width={width}&height={height}&fps={fps:g}",
                           "detect": detect} for cid in ids],
              "model": {"path": str(shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"), "max_batch": 1},
              "mqtt": {"enabled": False},
              "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
              "events": {"enabled": False}}
    app = ApplianceProcess(config, work_dir)
    idle_s: List[float] = []
    with_tiles_s: List[float] = []
    counts: List[TileCounts] = []
    try:
        app.start()
        wait_until(lambda: all(cam["frames_captured"] > 0 for cam in app.get("/api/v1/cameras").json()), 60,
                   "every camera to deliver frames")
        time.sleep(3.0)  # the first frames of each camera (imports, JIT) are not a tile's
        # Windows without and with tiles alternate, so a slow drift of the host's load (or of the
        # model's pace) falls on both alike; the median of the rounds' differences is reported.
        for _ in range(rounds):
            idle_s.append(_window_cpu_s(app.proc.pid, seconds))
            cpu_s, got = _tiles_window(app, ids, seconds)
            with_tiles_s.append(cpu_s)
            counts += got
    finally:
        app.close()
    tile_s = cameras * seconds
    per_round_ms = [1000 * (tiles - idle) / tile_s for idle, tiles in zip(idle_s, with_tiles_s)]
    pictures, received = sum(c.pictures for c in counts), sum(c.bytes for c in counts)
    return {"cameras": cameras, "tiles": cameras, "seconds_per_window": seconds, "rounds": rounds,
            "source": f"test://box {width}x{height} at {fps:g} fps", "detect": detect,
            "tile_request": f"snapshot.jpg?annotate=1&quality={QUALITY}, {TILE_MS} ms after each answer",
            "appliance_cpu_percent_idle": [round(100 * s / seconds, 1) for s in idle_s],
            "appliance_cpu_percent_with_tiles": [round(100 * s / seconds, 1) for s in with_tiles_s],
            # Not clamped: with the model running, its own variation between windows can exceed what
            # the tiles cost, and a negative difference says so plainly.
            "cpu_ms_per_tile_per_s_by_round": [round(ms, 2) for ms in per_round_ms],
            "cpu_ms_per_tile_per_s": round(statistics.median(per_round_ms), 2),
            "pictures_per_tile_per_s": round(pictures / (tile_s * rounds), 2),
            "bytes_per_tile_per_s": round(received / (tile_s * rounds)),
            "bytes_per_picture": round(received / pictures) if pictures else None,
            "failed_requests": sum(c.failures for c in counts)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cameras", type=int, default=4, help="cameras, one tile open on each")
    parser.add_argument("--seconds", type=float, default=20.0, help="each window: without tiles, with tiles")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of windows, without and with tiles")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--detect", action="store_true", help="the cameras detect (the model runs too)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="live-tiles-") as work:
        result = measure(args.cameras, args.seconds, args.rounds, args.width, args.height, args.fps, args.detect, Path(work))
    print(json.dumps(result, indent=2))
    if args.json:
        write_results(args.json, result, collect(ONNXRUNTIME_CPU if args.detect else NO_MODEL))
    return 0 if result["pictures_per_tile_per_s"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
