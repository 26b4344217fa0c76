"""Whether a name of bench code written in docs or results files exists in the repository.

Two kinds of names are checked, both without importing bench code (a GPU command's module may
need packages this machine lacks):

* dotted names, ``bench.gpu.torch_engine.TorchFp16StandIn``: a module file or package under
  bench/, then names defined at the top level of that module;
* commands, ``python -m bench.gpu pipeline --seconds 6``: the module, and for a family with
  several commands (a ``COMMANDS`` table in its ``__main__.py``) a command of that table.
"""
from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path
from typing import Iterator, List, Optional, Set

REPO = Path(__file__).resolve().parents[2]

#: ``bench.x.y`` not inside a path or file name (``gpu-bench.sh``, ``/tmp/bench.json``)
DOTTED = re.compile(r"(?<![\w/.\-])bench(?:\.[A-Za-z_]\w*)+")
FILE_SUFFIXES = {"json", "md", "sh", "py", "mp4", "yaml", "yml", "txt", "ts", "log"}
#: ``python -m bench...`` and what follows it up to the end of the line or of a code span
COMMAND = re.compile(r"python3?\s+-m\s+(bench(?:\.\w+)+)(?![\w<])([^`\n\"]*)")
#: a word that names a command (``decode-scaling``); anything else after the module is an option or prose
COMMAND_WORD = re.compile(r"[a-z][a-z0-9-]*")


def _module_file(parts: List[str]) -> Optional[Path]:
    base = REPO.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _top_level_names(path: Path) -> Set[str]:
    names: Set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _class_names(path: Path, class_name: str) -> Set[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))} | {
                t.id for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    return set()


def dotted_exists(name: str) -> bool:
    """``bench.common.media.ensure_camera_clip``: the longest module prefix, then at most a
    top-level name and one of its members."""
    parts = name.split(".")
    if parts[-1] in FILE_SUFFIXES:
        return True  # a file name such as bench.json, not a module
    for cut in range(len(parts), 0, -1):
        path = _module_file(parts[:cut])
        if path is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if rest[0] not in _top_level_names(path):
            return False
        return len(rest) == 1 or (len(rest) == 2 and rest[1] in _class_names(path, rest[0]))
    return False


def _family_commands(module: str) -> Optional[Set[str]]:
    """The COMMANDS of ``python -m <module>``, or None for a module that takes options only."""
    main = _module_file(module.split(".") + ["__main__"])
    if main is None:
        return None
    for node in ast.parse(main.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMMANDS" for t in node.targets):
            if isinstance(node.value, ast.Dict):
                return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return None


def command_problem(module: str, rest: str) -> Optional[str]:
    """Why ``python -m <module> <rest>`` does not run here, or None."""
    parts = module.split(".")
    if _module_file(parts) is None:
        return f"there is no module {module}"
    if _module_file(parts + ["__main__"]) is None and (REPO.joinpath(*parts) / "__init__.py").is_file():
        return f"{module} is a package without __main__"
    commands = _family_commands(module)
    if commands is None:
        return None
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    first = words[0] if words else ""
    if not COMMAND_WORD.fullmatch(first):
        return None
    if first not in commands:
        return f"python -m {module} has no command {first!r} (it has {', '.join(sorted(commands))})"
    return None


def problems_in(text: str) -> Iterator[str]:
    """Every bench name or command in ``text`` that does not exist."""
    for match in DOTTED.finditer(text):
        if not dotted_exists(match.group(0)):
            yield f"{match.group(0)} does not exist"
    for match in COMMAND.finditer(text):
        problem = command_problem(match.group(1), match.group(2))
        if problem is not None:
            yield f"{match.group(0).strip()}: {problem}"
