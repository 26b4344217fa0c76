"""``bench.fleet server`` at a small scale keeps working on both engines and measures what it says.

No timing is asserted beyond generous bounds: the figures depend on the machine and its load.
What must hold at any scale: every appliance online, the rollout applied by all, the killed
ones offline, no event lost against the independent witness.
"""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

DEVICES, KILL = 20, 3


def test_a_small_fleet_benchmark_on_both_engines(repo_root, tmp_path):
    out = tmp_path / "fleet-bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.fleet", "server", "--devices", str(DEVICES), "--cameras", "2", "--duration-s", "30",
         "--kill", str(KILL), "--kill-at-s", "22", "--settle-s", "1", "--event-period-s", "5", "--json", str(out)],
        cwd=repo_root, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(out.read_text())
    assert document["provenance"]["command"].startswith("python -m bench.fleet server --devices")
    results = document["engines"]
    assert [r["engine"] for r in results] == ["sqlite", "postgresql"]
    for r in results:
        assert r["all_online_s"] is not None and r["all_online_s"] < 60
        assert (r["rollout_applied"], r["rollout_rejected"]) == (DEVICES, 0)
        assert r["killed"] == KILL and r["offline_after_will_s"] is not None
        assert r["events_seen"] > 0 and r["events_lost"] == 0 and r["ends_lost"] == 0
        assert r["ingest_msgs_per_s"] > 0 and r["cpu_cores_steady"] > 0 and r["rss_max_mb"] > 0
    assert "| events lost / seen by the witness |" in done.stdout


def test_a_small_model_rollout_benchmark_reaches_every_appliance(repo_root, tmp_path):
    out = tmp_path / "models-bench.json"
    done = subprocess.run([sys.executable, "-m", "bench.fleet", "models", "--devices", "10", "--model-mb", "1",
                           "--json", str(out)], cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["devices"] == 10 and result["failed"] == 0
    # every appliance received the whole model (and its manifest), verified by its SHA-256
    assert result["bytes_served"] >= 10 * result["model_bytes"]
    assert result["fleet_cpu_s"] > 0 and result["all_running_s"] > 0
    assert "| bytes served |" in done.stdout
