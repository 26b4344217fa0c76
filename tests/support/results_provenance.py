"""Whether a results file says where its figures come from (bench.common.provenance writes the block)."""
from __future__ import annotations

import re
from datetime import datetime
from typing import List

from bench.common.provenance import REQUIRED_FIELDS
from tests.support.bench_names import command_problem

COMMIT = re.compile(r"[0-9a-f]{40}")


def provenance_problems(document: object) -> List[str]:
    if not isinstance(document, dict) or not isinstance(document.get("provenance"), dict):
        return ["no provenance block"]
    block = document["provenance"]
    problems = [f"no {name}" for name in REQUIRED_FIELDS if name not in block]
    if problems:
        return problems
    if block["commit"] is None:
        # measured before commits were recorded: the first commit that holds the file bounds it
        if not COMMIT.fullmatch(str(block.get("measured_at_or_before", ""))):
            problems.append("commit is null and measured_at_or_before names no commit")
    elif not COMMIT.fullmatch(block["commit"]):
        problems.append(f"commit {block['commit']!r} is not a commit id")
    if block["commit"] is not None and not isinstance(block["dirty"], bool):
        problems.append("dirty must say whether the tree had changes")
    try:
        datetime.fromisoformat(str(block["date"]))
    except ValueError:
        problems.append(f"date {block['date']!r} is not ISO 8601")
    host = block["host"]
    if not isinstance(host, dict) or not str(host.get("cpu") or "").strip():
        problems.append("host names no CPU")
    gpus = block["gpus"]
    if not isinstance(gpus, list) or any(not isinstance(g, dict) or not g.get("name") or "driver" not in g for g in gpus):
        problems.append("gpus must be a list of {name, driver} (empty: no GPU)")
    if not str(block["engine"] or "").strip():
        problems.append("engine is empty (TensorRT, a named stand-in, a CPU runtime or 'no model')")
    match = re.fullmatch(r"python -m (bench(?:\.\w+)+)(.*)", str(block["command"]))
    if match is None:
        problems.append(f"command {block['command']!r} is not a bench command")
    else:
        problem = command_problem(match.group(1), match.group(2))
        if problem is not None:
            problems.append(problem)
    return problems
