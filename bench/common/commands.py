"""One entry point per benchmark family: ``python -m bench.<family> COMMAND [options]``.

Each command is a module with ``main(argv) -> int``; it is imported only when chosen, so
``--help`` and the commands that need no GPU run on any machine.
"""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence


@dataclass(frozen=True)
class Command:
    module: str
    summary: str


def run_command(prog: str, description: str, commands: Mapping[str, Command], argv: Optional[Sequence[str]] = None) -> int:
    listing = "\n".join(f"  {name:<16} {command.summary}" for name, command in commands.items())
    parser = argparse.ArgumentParser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=f"commands:\n{listing}\n\n{prog} COMMAND --help lists the options of one command.")
    parser.add_argument("command", choices=list(commands), metavar="COMMAND", help="the command to run (listed below)")
    # REMAINDER keeps the command's own options (and its --help) for its parser
    parser.add_argument("args", nargs=argparse.REMAINDER, help="options of the command")
    args = parser.parse_args(argv)
    module = importlib.import_module(commands[args.command].module)
    return module.main(args.args)
