"""Run Python as on a machine where some installed packages are missing.

A finder first on ``sys.meta_path`` answers every import of a hidden package (and its
submodules) with ``ModuleNotFoundError``, exactly as Python does for a package that is not
there, so the code under test takes its real "not installed" path.

    python -m tests.support.without_packages cv2,av -m edge_app.cli check-config -c config.yaml

Child processes (multiprocessing, the decoder child) do not inherit the hiding.
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
    """Hide ``names`` from every later import in this process; already imported copies are forgotten."""
    finder = HidingFinder(names)
    for module in [m for m in sys.modules if m.partition(".")[0] in finder.names]:
        del sys.modules[module]
    sys.meta_path.insert(0, finder)
    return finder


def python_without(names: Iterable[str], module: str, *args: str) -> List[str]:
    """The command line that runs ``python -m module args...`` with ``names`` hidden."""
    return [sys.executable, "-m", __name__, ",".join(sorted(names)) or ",", "-m", module, *args]


def main(argv: List[str]) -> None:
    if len(argv) < 3 or argv[1] != "-m":
        raise SystemExit("usage: python -m tests.support.without_packages NAME[,NAME...] -m MODULE [ARG...]")
    hide(name for name in argv[0].split(",") if name)
    sys.argv = [argv[2], *argv[3:]]
    runpy.run_module(argv[2], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
