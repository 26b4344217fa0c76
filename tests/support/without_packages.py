"""Run Python as on a machine where some installed packages are missing.

A finder first on ``sys.meta_path`` answers every import of a hidden package (and its
submodules) with ``ModuleNotFoundError``, exactly as Python does for a package that is not
there, so the code under test takes its real "not installed" path.

    python -m tests.support.without_packages cv2,av -m edge_app check-config -c config.yaml
    python -m tests.support.without_packages psycopg -c "from edge_app.fleet_service import db"

Child processes (multiprocessing, the decoder child) do not inherit the hiding. Modules imported
before the finder is in place (by ``.pth`` files at start-up) stay, as a venv's own tooling would.
"""
from __future__ import annotations

import importlib.abc
import runpy
import sys
from typing import FrozenSet, Iterable, List, Optional, Sequence


class HidingFinder(importlib.abc.MetaPathFinder):
    """Refuses the top-level packages it names, as if they were not installed."""

    def __init__(self, names: Iterable[str]):
        self.names: FrozenSet[str] = frozenset(names)

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def hide(names: Iterable[str]) -> HidingFinder:
    """Hide ``names`` from every later import in this process."""
    finder = HidingFinder(names)
    sys.meta_path.insert(0, finder)
    return finder


def python_without(names: Iterable[str], *args: str) -> List[str]:
    """The command line that runs ``python -m MODULE ARG...`` or ``python -c CODE`` with ``names`` hidden."""
    return [sys.executable, "-m", __name__, ",".join(sorted(names)) or ",", *args]


def main(argv: List[str]) -> None:
    if len(argv) < 3 or argv[1] not in ("-m", "-c"):
        raise SystemExit("usage: python -m tests.support.without_packages NAME[,NAME...] (-m MODULE | -c CODE) [ARG...]")
    hide(name for name in argv[0].split(",") if name)
    if argv[1] == "-c":
        sys.argv = ["-c", *argv[3:]]
        exec(compile(argv[2], "<string>", "exec"), {"__name__": "__main__"})
        return
    sys.argv = [argv[2], *argv[3:]]
    runpy.run_module(argv[2], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
