"""What device health sampling costs: CPU time per sample, as a share of one core at ``health.interval_s``.

    python -m bench.cpu health-cost [--samples 200] [--interval-s 5] [--root /] [--json PATH]

Takes ``--samples`` samples back to back with the appliance's own sampler (every reader, each
in its guarded thread, problems and summary included) and reads the process's CPU time
(``time.process_time``: every thread of the process, so the reader threads count) and the wall
time per sample. The share of one core is CPU seconds per sample / ``--interval-s``; the budget
is 0.5 %. ``--root`` reads another tree instead of this host's ``/`` (e.g. the synthetic ``tests/health/trees/orin-nx``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

from bench.common.provenance import NO_MODEL, collect, write_results
from edge_app.config.schema import HealthConfig
from edge_app.health.sampler import HealthSampler

BUDGET_PERCENT_OF_CORE = 0.5


def measure(samples: int, interval_s: float, root: Path) -> dict:
    with tempfile.TemporaryDirectory() as base:
        Path(base, "events").mkdir()
        sampler = HealthSampler(HealthConfig(interval_s=interval_s), [".", "events"], root=root, base=Path(base))
        sampler.sample()  # the first sample finds the sysfs files and imports NVML
        cpu_start_s, wall_start_s = time.process_time(), time.perf_counter()
        for _ in range(samples):
            report = sampler.sample()
        cpu_s = (time.process_time() - cpu_start_s) / samples
        wall_s = (time.perf_counter() - wall_start_s) / samples
    return {"root": str(root), "samples": samples, "interval_s": interval_s,
            "cpu_ms_per_sample": round(cpu_s * 1000, 3), "wall_ms_per_sample": round(wall_s * 1000, 3),
            "percent_of_one_core": round(100.0 * cpu_s / interval_s, 4),
            "budget_percent_of_one_core": BUDGET_PERCENT_OF_CORE,
            "gpu": report.gpu if isinstance(report.gpu, str) else [g.name for g in report.gpu]}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--interval-s", type=float, default=5.0)
    parser.add_argument("--root", type=Path, default=Path("/"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = measure(args.samples, args.interval_s, args.root)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        write_results(args.json, result, collect(NO_MODEL))
    return 0 if result["percent_of_one_core"] <= BUDGET_PERCENT_OF_CORE else 1


if __name__ == "__main__":
    sys.exit(main())
