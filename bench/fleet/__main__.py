"""``python -m bench.fleet COMMAND``: a simulated fleet of appliances (docs/fleet.md, docs/fleet-benchmark.md)."""
from __future__ import annotations

import sys

from bench.common.commands import Command, run_command

DESCRIPTION = "A simulated fleet of appliances (docs/fleet.md, docs/fleet-benchmark.md)."
COMMANDS = {
    "sim": Command("bench.fleet.sim", "N simulated appliances on a broker; kills, a timed configuration rollout"),
    "models": Command("bench.fleet.models", "a model version rolled out over the air to N simulated appliances"),
    "first-detection": Command("bench.fleet.first_detection", "time to first detection of a fresh appliance with and "
                                                             "without a prebuilt engine from the fleet (stand-in TensorRT)"),
    "server": Command("bench.fleet.server", "the fleet server (edge-app fleet) under simulated appliances, SQLite and PostgreSQL"),
}

if __name__ == "__main__":
    sys.exit(run_command("python -m bench.fleet", DESCRIPTION, COMMANDS))
