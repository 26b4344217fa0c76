"""Where the benchmarks keep their results (the repository and the shared models and images are
``testkit.paths``'); Python's thread switch interval for a run."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from testkit.paths import REPO


def results_dir() -> Path:
    """Generated clips and JSON results (git-ignored)."""
    return REPO / "bench" / "results"


def add_switch_interval_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--switch-interval-ms", type=float,
                        help="Python's thread switch interval (default: the appliance's, edge_app.commands.run_appliance)")


def apply_switch_interval(interval_ms: Optional[float]) -> float:
    """Python's thread switch interval for this run: ``interval_ms``, or the appliance's (None).
    Returns the interval in effect, in milliseconds, for the results."""
    if interval_ms is None:
        from edge_app.commands.run_appliance import tune_interpreter

        tune_interpreter()  # as edge-app run does
    else:
        sys.setswitchinterval(interval_ms / 1000.0)
    return round(sys.getswitchinterval() * 1000.0, 3)
