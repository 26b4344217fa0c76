"""A bench command writes its results with their provenance: the commit, whether the tree had
changes, the command exactly as typed, the date, the host and the engine."""
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from bench.common.provenance import NO_MODEL, Host, Provenance, write_results
from tests.support.results_provenance import provenance_problems


def _git(repo_root, *args):
    return subprocess.run(["git", *args], cwd=repo_root, capture_output=True, text=True, check=True).stdout.strip()


def test_a_bench_command_writes_where_its_figures_come_from(repo_root, tmp_path):
    out = tmp_path / "health cost.json"  # a space, so the command line must be quoted to be exact
    started = datetime.now(timezone.utc).replace(microsecond=0)
    # The command exits 1 when sampling costs more than 0.5 % of a core at the interval; a long
    # interval keeps a loaded CI host from turning this provenance test into a budget test.
    done = subprocess.run([sys.executable, "-m", "bench.cpu", "health-cost", "--samples", "2", "--interval-s", "600",
                           "--json", str(out)], cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(out.read_text())
    provenance = document["provenance"]
    assert provenance["command"] == (f"python -m bench.cpu health-cost --samples 2 --interval-s 600 --json '{out}'")
    assert provenance["commit"] == _git(repo_root, "rev-parse", "HEAD")
    dirty = bool(_git(repo_root, "status", "--porcelain"))
    assert provenance["dirty"] is dirty
    assert started <= datetime.fromisoformat(provenance["date"]) <= datetime.now(timezone.utc)
    assert provenance["host"]["cpu"] and provenance["host"]["cpus"] >= 1
    assert isinstance(provenance["gpus"], list) and provenance["engine"] == NO_MODEL
    assert provenance_problems(document) == []
    assert document["samples"] == 2  # the figures are still there, beside the provenance


def test_the_writer_keeps_the_result_and_refuses_to_overwrite_a_provenance_key(tmp_path):
    provenance = Provenance(commit="0" * 40, dirty=False, command="python -m bench.track --json x.json",
                            date=(datetime.now(timezone.utc) - timedelta(minutes=1)).isoformat(),
                            host=Host(cpu="test CPU", cpus=2), gpus=[], engine=NO_MODEL)
    path = write_results(tmp_path / "deep" / "r.json", {"scenes": [1, 2]}, provenance)
    assert json.loads(path.read_text()) == {"provenance": provenance.as_dict(), "scenes": [1, 2]}
    with pytest.raises(ValueError):
        write_results(tmp_path / "r2.json", {"provenance": "mine"}, provenance)
