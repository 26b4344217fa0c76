"""``python -m bench.cpu COMMAND``: the benchmark on the host CPU (bench/README.md)."""
from __future__ import annotations

import sys

from bench.common.commands import Command, run_command

DESCRIPTION = "The benchmark on the host CPU (bench/README.md)."
COMMANDS = {
    "run": Command("bench.cpu.run", "raw backend, pipeline, full appliance, Ultralytics, stages; --soak-minutes for the long run"),
    "analysis-cost": Command("bench.cpu.analysis_cost", "the full appliance with tracking and events off and on"),
}

if __name__ == "__main__":
    sys.exit(run_command("python -m bench.cpu", DESCRIPTION, COMMANDS))
