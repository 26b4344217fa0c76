"""Every figure in docs/ can be traced: each file in docs/results/ was written by a bench command
and says which commit, command, date, host, GPU and engine gave it; every bench module or command
that docs and results files name exists."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.bench_names import REPO, dotted_exists, problems_in
from tests.support.results_provenance import provenance_problems

RESULTS = sorted((REPO / "docs" / "results").glob("*.json"))
DOCS = sorted((REPO / "docs").rglob("*.md")) + [REPO / "bench" / "README.md"]
BENCH_CODE = sorted((REPO / "bench").rglob("*.py"))


def test_there_are_results_files():
    assert RESULTS, "docs/results/ is empty: the docs' figures need their results files"


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_a_results_file_says_where_its_figures_come_from(path: Path):
    problems = provenance_problems(json.loads(path.read_text()))
    problems += sorted(set(problems_in(path.read_text())))
    assert not problems, f"{path.name}: " + "; ".join(problems)


@pytest.mark.parametrize("path", DOCS + BENCH_CODE, ids=[str(p.relative_to(REPO)) for p in DOCS + BENCH_CODE])
def test_docs_and_bench_name_only_bench_code_that_exists(path: Path):
    problems = sorted(set(problems_in(path.read_text())))
    assert not problems, f"{path.relative_to(REPO)}: " + "; ".join(problems)


def test_every_results_file_the_docs_cite_exists():
    cited = {m.group(1) for doc in DOCS for m in re.finditer(r"(?<!bench/)results/([\w.\-]+\.json)", doc.read_text())}
    missing = sorted(name for name in cited if not (REPO / "docs" / "results" / name).is_file())
    assert not missing, f"cited but not in docs/results/: {missing}"


# The checks themselves: each must catch what it is there to catch.

def test_the_check_refuses_a_file_without_provenance_and_a_module_that_does_not_exist():
    assert provenance_problems({"runs": []}) == ["no provenance block"]
    block = {"commit": None, "dirty": None, "command": "python -m bench.gpu_pipeline --seconds 4",
             "date": "2026-12-03T10:06:03+00:00", "host": {"cpu": "Xeon"}, "gpus": [], "engine": "no model"}
    problems = provenance_problems({"provenance": block})
    assert "commit is null and measured_at_or_before names no commit" in problems
    assert "there is no module bench.gpu_pipeline" in problems
    (problem,) = problems_in("python -m bench.gpu pipelines --seconds 4")
    assert "python -m bench.gpu has no command 'pipelines' (it has decode-scaling, motion-parts, pipeline," in problem
    del block["engine"]
    assert provenance_problems({"provenance": block}) == ["no engine"]


def test_the_check_knows_modules_names_and_file_names():
    assert dotted_exists("bench.common.media.ensure_camera_clip")
    assert dotted_exists("bench.gpu.torch_engine.TorchFp16StandIn")
    assert dotted_exists("bench.common.provenance")
    assert not dotted_exists("bench.media.ensure_camera_clip")
    assert not dotted_exists("bench.common.media.no_such_function")
    assert not list(problems_in("see gpu-bench.sh and /tmp/bench.json"))
