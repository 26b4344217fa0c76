"""edge_app's imports form no loop and point one way, and every module of the package is in a layer.

From the bottom: the foundation every part may use (configuration, process helpers, CUDA, the JSON
forms), the parts (capture, detect, events, MQTT, recording, the typed reports), what is built on
them and shared (the pipeline, the change path, the HTTP server, the fleet's wire protocol), the
programs' cores (the appliance and its fleet agent, the fleet service), and on top the REST API and
the commands. The fleet service is a separate program: it may import only what its allow-list
names, never the appliance's side. Read from the source, nothing imported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, FrozenSet, List, Tuple

import pytest

from tests.support.import_graph import Graph, every_import, import_graph, loops, module_files

PACKAGE = Path(__file__).resolve().parents[2] / "edge_app"
ROOT = "edge_app"

#: lowest first; a module may import its own layer and those below, never one above. A name holds
#: the module and everything under it, except ROOT, which is only the package's own ``__init__``.
LAYERS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("foundation", (ROOT, "edge_app.version", "edge_app.canonical_json", "edge_app.finite_json", "edge_app.opencv",
                    "edge_app.mqtt_takeover", "edge_app.process", "edge_app.config", "edge_app.cuda")),
    ("parts", ("edge_app.capture", "edge_app.detect", "edge_app.events", "edge_app.health", "edge_app.motion",
               "edge_app.mqtt", "edge_app.notify", "edge_app.privacy", "edge_app.record", "edge_app.reporting", "edge_app.review",
               "edge_app.track")),
    ("shared", ("edge_app.pipeline", "edge_app.config_change", "edge_app.http_server", "edge_app.fleet_protocol")),
    ("programs", ("edge_app.appliance", "edge_app.fleet_agent", "edge_app.fleet_service")),
    ("entry points", ("edge_app.api", "edge_app.cli", "edge_app.commands", "edge_app.__main__")),
)

FLEET_SERVICE = "edge_app.fleet_service"
#: all the fleet service may import besides itself: the server both programs share, the wire
#: protocol both speak, and small parts below them; never the appliance, its API or its agent
FLEET_SERVICE_MAY_IMPORT: FrozenSet[str] = frozenset({
    "edge_app.canonical_json", "edge_app.config", "edge_app.events", "edge_app.finite_json",
    "edge_app.fleet_protocol", "edge_app.health", "edge_app.http_server", "edge_app.mqtt_takeover",
    "edge_app.process", "edge_app.record", "edge_app.version",
})
#: the only modules outside the fleet service that may import it: the command that starts it
FLEET_SERVICE_IMPORTED_BY: FrozenSet[str] = frozenset({"edge_app.cli"})


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(PACKAGE)


def _names(module: str, name: str) -> bool:
    return module == name or (name != ROOT and module.startswith(f"{name}."))


def _layers_of(module: str) -> List[int]:
    return [layer for layer, (_, names) in enumerate(LAYERS) if any(_names(module, name) for name in names)]


def _layer_of(module: str) -> int:
    layers = _layers_of(module)
    assert len(layers) == 1, f"{module} is in {len(layers)} layers; test_every_module_is_in_exactly_one_layer says which"
    return layers[0]


def _package_of(module: str) -> str:
    """``edge_app.<top-level module or package>``, the unit the allow-list names."""
    return ".".join(module.split(".")[:2])


def _where(module: str, target: str) -> str:
    """``path:line imports target`` for a failure message (the file alone for a relative import)."""
    path = module_files(PACKAGE)[module]
    shown = path.relative_to(PACKAGE.parent)
    for name, line in every_import(path):
        if name == target or target.startswith(f"{name}."):
            return f"{shown}:{line} ({module}) imports {target}"
    return f"{shown} ({module}) imports {target}"


def test_no_module_imports_itself_round_a_loop(graph):
    assert loops(graph) == [], "move what the modules of a loop share into a module below them all"


def test_every_module_is_in_exactly_one_layer(graph):
    placed = {module: [LAYERS[layer][0] for layer in _layers_of(module)] for module in sorted(graph)}
    unplaced = [module for module, layers in placed.items() if not layers]
    twice = [f"{module} is in {' and '.join(layers)}" for module, layers in placed.items() if len(layers) > 1]
    assert unplaced == [], "put each new package or module in a layer of LAYERS, by what it imports"
    assert twice == []


Import = Tuple[str, str]  # (module, what it imports)


def upward_imports(graph: Graph) -> List[Import]:
    return [(module, target) for module, targets in sorted(graph.items()) for target in sorted(targets)
            if _layer_of(module) < _layer_of(target)]


def fleet_service_imports_outside_its_allow_list(graph: Graph) -> List[Import]:
    return [(module, target) for module, targets in sorted(graph.items()) if _names(module, FLEET_SERVICE)
            for target in sorted(targets)
            if not _names(target, FLEET_SERVICE) and _package_of(target) not in FLEET_SERVICE_MAY_IMPORT]


def imports_of_the_fleet_service(graph: Graph) -> List[Import]:
    return [(module, target) for module, targets in sorted(graph.items())
            if not _names(module, FLEET_SERVICE) and module not in FLEET_SERVICE_IMPORTED_BY
            for target in sorted(targets) if _names(target, FLEET_SERVICE)]


def test_imports_point_down_the_layers(graph):
    upward = [f"{_where(module, target)}: layer {LAYERS[_layer_of(module)][0]!r} is below {LAYERS[_layer_of(target)][0]!r}"
              for module, target in upward_imports(graph)]
    assert upward == [], "move what both need into a module below them, rather than the module up"


def test_the_fleet_service_imports_only_what_its_allow_list_names(graph):
    outside = [_where(module, target) for module, target in fleet_service_imports_outside_its_allow_list(graph)]
    assert outside == [], "the fleet service shares code with the appliance only through packages below both"


def test_only_the_cli_imports_the_fleet_service(graph):
    assert [_where(module, target) for module, target in imports_of_the_fleet_service(graph)] == []


@pytest.mark.parametrize("check, module, target, found", [
    (upward_imports, "edge_app.config.schema", "edge_app.api.app", True),
    (upward_imports, "edge_app.api.app", "edge_app.config.schema", False),
    (upward_imports, "edge_app", "edge_app.cli", True),  # the root's __init__ is at the bottom, not everywhere
    (upward_imports, "edge_app.fleet_agent.agent", "edge_app.appliance.appliance", False),  # the same layer
    (fleet_service_imports_outside_its_allow_list, "edge_app.fleet_service.app", "edge_app.api.app", True),
    (fleet_service_imports_outside_its_allow_list, "edge_app.fleet_service.rollouts", "edge_app.fleet_agent.agent", True),
    (fleet_service_imports_outside_its_allow_list, "edge_app.fleet_service.ingest", "edge_app.mqtt.outbox", True),
    (fleet_service_imports_outside_its_allow_list, "edge_app.fleet_service.app", "edge_app.http_server.auth", False),
    (fleet_service_imports_outside_its_allow_list, "edge_app.fleet_service.app", "edge_app.fleet_service.db", False),
    (imports_of_the_fleet_service, "edge_app.commands.run_appliance", "edge_app.fleet_service.run", True),
    (imports_of_the_fleet_service, "edge_app.cli", "edge_app.fleet_service.run", False),
])
def test_each_rule_finds_the_import_that_breaks_it(check, module, target, found):
    assert check({module: {target}, target: set()}) == ([(module, target)] if found else [])


def test_the_rules_name_modules_that_exist(graph):
    # a renamed package would otherwise leave its layer or allow-list entry empty and a rule silently true
    named = [name for _, names in LAYERS for name in names] + sorted(FLEET_SERVICE_MAY_IMPORT | FLEET_SERVICE_IMPORTED_BY)
    missing = [name for name in named if not any(_names(module, name) for module in graph)]
    assert missing == []


def test_the_graph_sees_every_kind_of_import(graph):
    assert {"edge_app.detect.yolo_outputs", "edge_app.detect.batch"} <= graph["edge_app.detect.base"]  # from a.b import C
    assert "edge_app.detect.base" in graph["edge_app.detect"]  # package re-export
    assert "edge_app.cli" in graph["edge_app.__main__"]
    assert "edge_app.fleet_service.run" in graph["edge_app.cli"]  # inside a function


@pytest.mark.parametrize("module, layer", [
    ("edge_app", "foundation"),  # the package's own __init__ only
    ("edge_app.config.schema", "foundation"),
    ("edge_app.detect.tensorrt.cache", "parts"),
    ("edge_app.http_server.auth", "shared"),
    ("edge_app.fleet_service.app", "programs"),
    ("edge_app.__main__", "entry points"),
])
def test_a_name_holds_its_module_and_everything_under_it(module, layer):
    assert LAYERS[_layer_of(module)][0] == layer


def test_a_module_in_no_layer_is_in_none_rather_than_in_the_root_s():
    assert _layers_of("edge_app.brand_new") == []


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
