"""edge_app's imports form no loop and point one way: capture/detect/mqtt (with the process helpers
and the appliance's reports) below the pipeline and the configuration change path, below the
appliance and its fleet agent, below the API and the commands (read from the source, nothing imported)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.support.import_graph import import_graph, loops

PACKAGE = Path(__file__).resolve().parents[2] / "edge_app"

#: lowest first; a module may import its own layer and those below, never one above
LAYERS: Tuple[Tuple[str, ...], ...] = (
    ("edge_app.capture", "edge_app.detect", "edge_app.events", "edge_app.health", "edge_app.motion", "edge_app.mqtt",
     "edge_app.privacy", "edge_app.process", "edge_app.record", "edge_app.reporting", "edge_app.track"),
    ("edge_app.pipeline", "edge_app.config_change"),
    ("edge_app.appliance", "edge_app.fleet_agent"),
    ("edge_app.api", "edge_app.cli", "edge_app.commands"),
)


@pytest.fixture(scope="module")
def graph():
    return import_graph(PACKAGE)


def _layer_of(module: str) -> int:
    for layer, prefixes in enumerate(LAYERS):
        if any(module == prefix or module.startswith(f"{prefix}.") for prefix in prefixes):
            return layer
    return -1


def test_no_module_imports_itself_round_a_loop(graph):
    assert loops(graph) == [], "move what the modules of a loop share into a module below them all"


def test_imports_point_down_the_layers(graph):
    upward: List[str] = [f"{module} imports {target}" for module, targets in sorted(graph.items())
                         for target in sorted(targets) if -1 < _layer_of(module) < _layer_of(target)]
    assert upward == []


def test_every_layer_names_modules_that_exist(graph):
    # a renamed package would otherwise leave its layer empty and the rule above silently true
    missing = [prefix for prefixes in LAYERS for prefix in prefixes
               if not any(module == prefix or module.startswith(f"{prefix}.") for module in graph)]
    assert missing == []


def test_the_graph_sees_every_kind_of_import(graph):
    assert {"edge_app.detect.decode", "edge_app.detect.batch"} <= graph["edge_app.detect.base"]  # from a.b import C
    assert "edge_app.detect.base" in graph["edge_app.detect"]  # package re-export
    assert "edge_app.cli" in graph["edge_app.__main__"]


def _package(tmp_path: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


def test_a_loop_behind_type_checking_or_inside_a_function_is_found(tmp_path):
    package = _package(tmp_path, {
        "__init__.py": "",
        "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import Thing\n",
        "high.py": "from pkg import mid\n",
        "mid.py": "def later():\n    from .low import x\n",
        "other.py": "import pkg.low\n",
    })
    assert loops(import_graph(package)) == [["pkg.high", "pkg.low", "pkg.mid"]]


def test_a_subpackage_keeps_its_full_names(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "sub/__init__.py": "", "sub/a.py": "from pkg.sub import b\n",
                                  "sub/b.py": "from ..sub.a import thing\n"})
    assert loops(import_graph(package / "sub")) == [["pkg.sub.a", "pkg.sub.b"]]
