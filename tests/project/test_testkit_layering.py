"""The test kit sits between the package and its users: ``testkit`` (brokers, RTSP servers,
appliance processes, ports, waiting, certificates) is shared by ``tests`` and ``bench``; the
benchmarks take nothing from the tests, the kit nothing from either, the package nothing from
the kit, the tests or the reference pages' generators (``docgen``), and those nothing from the kit,
the tests or the benchmarks (read from the source, nothing imported)."""
from __future__ import annotations

import ast
import fnmatch
from pathlib import Path
from typing import List, Tuple

import pytest

from tests.support.import_graph import every_import

REPO = Path(__file__).resolve().parents[2]

#: folder -> the top-level packages of this repository its files must never import
FORBIDDEN = (
    ("bench", ("tests",)),
    ("testkit", ("tests", "bench")),
    ("edge_app", ("tests", "bench", "testkit", "docgen")),
    ("docgen", ("tests", "bench", "testkit")),
)


def imports_of(folder: Path, forbidden: Tuple[str, ...]) -> List[str]:
    """``path:line: module`` for every import under ``folder`` of a package in ``forbidden``."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for module, line in every_import(path):
            if module.split(".")[0] in forbidden:
                found.append(f"{path.relative_to(folder.parent).as_posix()}:{line}: {module}")
    return found


@pytest.mark.parametrize("folder, forbidden", FORBIDDEN, ids=[folder for folder, _ in FORBIDDEN])
def test_imports_point_one_way(folder, forbidden):
    found = imports_of(REPO / folder, forbidden)
    assert not found, f"{folder} imports {' or '.join(forbidden)}; move what it needs into testkit:\n" + "\n".join(found)


def test_the_scan_finds_every_form_of_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(
        "import tests.support.net\nfrom tests.e2e import appliance\n"
        "def f():\n    from tests.mqtt.certs import make_test_certificates\n"
        "import testkit\nfrom . import sibling\n")
    assert imports_of(tmp_path / "pkg", ("tests",)) == [
        "pkg/a.py:1: tests.support.net", "pkg/a.py:2: tests.e2e", "pkg/a.py:4: tests.mqtt.certs"]


def test_only_the_package_is_installed():
    """setup.py's ``find_packages(include=...)`` patterns take edge_app and none of the kit, the
    tests or the benchmarks."""
    call = next(node for node in ast.walk(ast.parse((REPO / "setup.py").read_text()))
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "find_packages")
    include = next(ast.literal_eval(keyword.value) for keyword in call.keywords if keyword.arg == "include")
    top_level = sorted(path.parent.name for path in REPO.glob("*/__init__.py"))
    assert {"edge_app", "testkit", "tests", "bench"} <= set(top_level)
    installed = [name for name in top_level if any(fnmatch.fnmatchcase(name, pattern) for pattern in include)]
    assert installed == ["edge_app"]
