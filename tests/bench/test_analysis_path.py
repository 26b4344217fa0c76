"""``python -m bench.cpu analysis-path`` measures this checkout and another commit's ``edge_app``
in separate processes, each importing its own tree, and writes its results with provenance.

No timing is asserted: the figures depend on the machine and on what else runs on it.
"""
import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize("areas", ["one", "three"])
def test_each_tree_is_measured_with_its_own_code(repo_root, tmp_path, areas):
    out = tmp_path / "analysis-path.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.cpu", "analysis-path", "--objects", "3", "--areas", areas, "--frames", "20",
         "--repeats", "1", "--rounds", "1", "--against", "HEAD", "--json", str(out)],
        cwd=repo_root, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["provenance"]["command"].startswith("python -m bench.cpu analysis-path")
    (case,) = results["cases"]
    assert (case["objects"], case["areas"]) == (3, areas)
    assert set(case["trees"]) == {"this checkout", "HEAD"}
    for figures in case["trees"].values():
        assert figures["areas_us"] > 0 and figures["analysis_us"]["total"] > 0
        assert figures["tracked_per_frame"] > 0
    # the same scene through the same rules: the same number of event messages
    assert len({figures["analysis_us"]["event_messages"] for figures in case["trees"].values()}) == 1
    assert set(case["ratios"]["HEAD"]) == {"areas", "analysis"}
