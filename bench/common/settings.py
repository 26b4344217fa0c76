"""Where the benchmarks find the repository, the shared models and images and their results; Python's
thread switch interval for a run."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional


def repo_dir() -> Path:
    return Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """The shared models and images: ``EDGE_APP_SHARED`` or ``../shared`` beside the repository."""
    return Path(os.environ.get("EDGE_APP_SHARED", repo_dir().parent / "shared")).resolve()


def results_dir() -> Path:
    """Generated clips and JSON results (git-ignored)."""
    return repo_dir() / "bench" / "results"


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
