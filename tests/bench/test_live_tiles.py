"""``python -m bench.cpu live-tiles`` on a real appliance, briefly: the tiles get pictures and the
figures are what the docs quote, with provenance."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_a_short_run_measures_pictures_bytes_and_cpu_per_tile(repo_root, model_path, tmp_path):
    out = tmp_path / "live-tiles.json"
    done = subprocess.run([sys.executable, "-m", "bench.cpu", "live-tiles", "--cameras", "1", "--seconds", "2",
                           "--rounds", "1", "--width", "320", "--height", "240", "--json", str(out)],
                          cwd=repo_root, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["pictures_per_tile_per_s"] > 1 and result["bytes_per_tile_per_s"] > 1000
    assert result["failed_requests"] == 0 and len(result["cpu_ms_per_tile_per_s_by_round"]) == 1
    assert isinstance(result["cpu_ms_per_tile_per_s"], float)
    assert result["provenance"]["command"].startswith("python -m bench.cpu live-tiles --cameras 1")
