"""What each install line of setup.py installs, read from setup.py and this environment's metadata.

``install_requires`` and ``extras_require`` are read from setup.py's source (nothing is run);
which import names a distribution provides, and what it depends on, come from the installed
distributions (``importlib.metadata``), so the answers hold for the packages really installed.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Set

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

SETUP_PY = Path(__file__).resolve().parents[2] / "setup.py"
PROJECT = "edge-app"


@dataclass(frozen=True)
class SetupRequirements:
    install_requires: List[str]
    extras_require: Dict[str, List[str]]


def read_setup(setup_py: Path = SETUP_PY) -> SetupRequirements:
    """The literal ``install_requires`` and ``extras_require`` of the ``setup()`` call."""
    for node in ast.walk(ast.parse(setup_py.read_text(), str(setup_py))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup":
            keywords = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords
                        if kw.arg in ("install_requires", "extras_require")}
            return SetupRequirements(keywords["install_requires"], keywords.get("extras_require", {}))
    raise ValueError(f"{setup_py} has no setup() call")


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *extras))


def distributions_installed_by(requirements: Iterable[str]) -> FrozenSet[str]:
    """Canonical names of the distributions ``requirements`` install here, with their dependencies."""
    seen: Set[str] = set()
    todo = [(Requirement(text), ()) for text in requirements]
    while todo:
        requirement, parent_extras = todo.pop()
        if not _applies(requirement, parent_extras):
            continue
        name = canonicalize_name(requirement.name)
        key = f"{name}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        todo.extend((Requirement(text), tuple(requirement.extras)) for text in dist.requires or ())
    return frozenset(key.partition("[")[0] for key in seen)


def import_names(distributions: Iterable[str]) -> FrozenSet[str]:
    """The top-level import names the installed ``distributions`` provide."""
    wanted = {canonicalize_name(name) for name in distributions}
    return frozenset(module for module, dists in metadata.packages_distributions().items()
                     if any(canonicalize_name(dist) in wanted for dist in dists))


def names_outside(distributions: Iterable[str]) -> FrozenSet[str]:
    """Every installed top-level import name that ``distributions`` (and edge-app itself) do not provide."""
    kept = {canonicalize_name(name) for name in distributions} | {PROJECT}
    return frozenset(module for module, dists in metadata.packages_distributions().items()
                     if not any(canonicalize_name(dist) in kept for dist in dists)
                     and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", module))
