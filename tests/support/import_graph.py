"""The import graph of a package, read from its source with ``ast`` (nothing is imported).

Every import counts: at module level, under ``if TYPE_CHECKING:`` and inside functions, since a
loop hidden behind any of them still ties the modules together for a reader.

    python -m tests.support.import_graph [PACKAGE_DIR]   # prints the loops; exit status 1 if any
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

Graph = Dict[str, Set[str]]


def module_files(package_dir: Path) -> Dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``package_dir`` (a package is its ``__init__``)."""
    package_dir = package_dir.resolve()
    top = package_dir
    while (top.parent / "__init__.py").exists():  # a subpackage's modules keep their full names
        top = top.parent
    found: Dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(top.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(module: str, path: Path, modules: Dict[str, Path]) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            for alias in node.names:
                # ``from a.b import c`` imports the module a.b.c when there is one, else a name of a.b
                submodule = f"{base}.{alias.name}"
                yield submodule if submodule in modules else base


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def module_level_imports(path: Path) -> Iterator[Tuple[str, int]]:
    """(absolute module name, line) of each import that runs when the module is imported: at module
    level and in class bodies, also under ``if``/``try``/``with``, never in a function or under
    ``if TYPE_CHECKING:``. Relative imports are left out: they stay inside the package."""
    def visit(statements: List[ast.stmt]) -> Iterator[Tuple[str, int]]:
        for node in statements:
            if isinstance(node, ast.Import):
                yield from ((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if not node.level and node.module:
                    yield node.module, node.lineno
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    yield from visit(node.body)
                yield from visit(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(handler.body for handler in node.handlers)):
                    yield from visit(block)
            elif isinstance(node, (ast.ClassDef, ast.With)):
                yield from visit(node.body)

    yield from visit(ast.parse(path.read_text(), str(path)).body)


def every_import(path: Path) -> Iterator[Tuple[str, int]]:
    """(absolute module name, line) of every import in the file, wherever it is."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module, node.lineno


def import_graph(package_dir: Path) -> Graph:
    """Each module of the package -> the modules of the same package it imports."""
    modules = module_files(package_dir)
    return {module: {target for target in _imported(module, path, modules) if target in modules and target != module}
            for module, path in modules.items()}


def loops(graph: Graph) -> List[List[str]]:
    """The groups of modules that import each other, directly or round a loop (strongly connected components)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(start: str) -> None:
        # iterative, so a deep package does not hit the recursion limit
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def main(argv: List[str]) -> int:
    package_dir = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "edge_app"
    graph = import_graph(package_dir)
    found = loops(graph)
    for group in found:
        print("import loop:", " <-> ".join(group))
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, {len(found)} loops")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
