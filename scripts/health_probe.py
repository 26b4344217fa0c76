#!/usr/bin/env python3
"""Print the device health report of this machine as JSON (what ``GET /api/v1/health/device`` answers).

    python scripts/health_probe.py [--samples 2] [--interval-s 1] [--root /] [--dir PATH ...] [--tegrastats]

``--samples`` > 1 samples that many times ``--interval-s`` apart (``cpu.load_percent`` needs two),
printing the last. ``--root`` reads a copy of a device's tree instead of ``/``. ``--dir`` names the
directories whose disk space is reported (default: the current one). ``--tegrastats`` adds
one line of JetPack's ``tegrastats``, parsed, for comparison (Jetson only). On a discrete GPU
host the GPU section needs ``nvidia-ml-py`` (``pip install nvidia-ml-py``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_app.config.schema import HealthConfig  # noqa: E402
from edge_app.health.sampler import HealthSampler  # noqa: E402
from edge_app.health.tegrastats import parse_line  # noqa: E402


def tegrastats_line(timeout_s: float = 5.0) -> str:
    process = subprocess.Popen(["tegrastats", "--interval", "1000"], stdout=subprocess.PIPE, text=True)
    try:
        return process.stdout.readline().strip() if process.stdout else ""
    finally:
        process.terminate()
        process.wait(timeout_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--interval-s", type=float, default=1.0)
    parser.add_argument("--root", type=Path, default=Path("/"))
    parser.add_argument("--dir", action="append", dest="dirs", default=None)
    parser.add_argument("--tegrastats", action="store_true")
    args = parser.parse_args()
    sampler = HealthSampler(HealthConfig(), args.dirs or ["."], root=args.root)
    for index in range(max(1, args.samples)):
        if index:
            time.sleep(args.interval_s)
        report = sampler.sample()
    body = report.to_dict()
    if args.tegrastats:
        try:
            body["tegrastats"] = dataclasses.asdict(parse_line(tegrastats_line()))
        except OSError as err:
            body["tegrastats"] = f"unavailable: {err}"
    print(json.dumps(body, indent=2, ensure_ascii=False))
    sampler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
