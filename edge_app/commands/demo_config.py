"""The demo's configuration in its state folder: a copy of configs/demo.yaml, on the ports asked for.

    python -m edge_app.commands.demo_config --template configs/demo.yaml --config STATE/config.yaml \
        [--api-port 8081] [--mqtt-port 1884]

scripts/demo.sh runs it before the appliance starts. The copy is made once (changes made through
the dashboard are saved to it and kept); a port given on the command line is written into it, so
the demo can run beside something else that holds 8080 or 1883. Prints one line for the script:
``API_HOST API_PORT MQTT_HOST MQTT_PORT``, the addresses the appliance will really use.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Optional, Sequence

from edge_app.config.file import ConfigError, load_config, save_config
from edge_app.config.schema import AppConfig


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, not {port}")
    return port


def with_ports(config: AppConfig, api_port: Optional[int], mqtt_port: Optional[int]) -> AppConfig:
    """``config`` listening on ``api_port`` and publishing to ``mqtt_port`` (None: as it is)."""
    api = config.api if api_port is None else config.api.model_copy(update={"port": api_port})
    mqtt = config.mqtt if mqtt_port is None else config.mqtt.model_copy(update={"port": mqtt_port})
    return config.model_copy(update={"api": api, "mqtt": mqtt})


def prepare(template: Path, path: Path, api_port: Optional[int], mqtt_port: Optional[int]) -> AppConfig:
    """The demo's configuration at ``path`` (copied from ``template`` when missing) on the ports given."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, path)  # a copy keeps the template's comments
    config = load_config(path)
    wanted = with_ports(config, api_port, mqtt_port)
    if wanted != config:
        save_config(wanted, path)
    return wanted


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, required=True, help="configs/demo.yaml")
    parser.add_argument("--config", type=Path, required=True, help="the copy in the demo's state folder")
    parser.add_argument("--api-port", type=_port, default=None, help="the dashboard's port (default: the copy's)")
    parser.add_argument("--mqtt-port", type=_port, default=None, help="the broker's port (default: the copy's)")
    args = parser.parse_args(argv)
    try:
        config = prepare(args.template, args.config, args.api_port, args.mqtt_port)
    except ConfigError as err:
        for problem in err.problems:
            print(f"demo: {err.source}: {problem}", file=sys.stderr)
        print(f"demo: fix it, or delete {args.config} to start from {args.template} again", file=sys.stderr)
        return 1
    print(config.api.host, config.api.port, config.mqtt.host, config.mqtt.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
