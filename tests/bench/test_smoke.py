"""The benchmark's 10-second smoke run keeps working: every section is in its JSON.

No timing is asserted: the figures depend on the machine and on what else runs on it.
"""
import json
import os
import subprocess
import sys

import pytest

SECTIONS = ("provenance", "meta", "clip", "raw", "predecoded", "full", "ultralytics", "stages", "targets", "table_markdown")


@pytest.mark.slow
def test_smoke_run_writes_every_section(repo_root, int8_model_path, model_path, images_dir, mosquitto_broker, tmp_path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, EDGE_APP_SHARED=str(images_dir.parent))
    done = subprocess.run(
        [sys.executable, "-m", "bench.cpu", "run", "--smoke", "--json", str(out), "--model", str(int8_model_path),
         "--batch-model", str(model_path), "--mqtt-host", mosquitto_broker.host, "--mqtt-port", str(mosquitto_broker.port)],
        cwd=repo_root, env=env, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    for section in SECTIONS:
        assert section in results, f"section {section} missing"
    for section in ("raw", "predecoded", "full"):
        assert results[section], f"section {section} is empty"
        for row in results[section]:
            assert row.get("status", "ok") == "ok", row
            assert row.get("frames_per_s", row.get("images_per_s")) is not None, row
    assert results["ultralytics"]["status"] == "skipped"
    assert results["stages"]["preprocess"]["cpu_ms"] is not None
    full = results["full"][0]
    assert full["latency_ms"]["count"] >= 0 and "cpu_percent" in full["resources"]
    assert "### Throughput" in results["table_markdown"] and "### Targets" in results["table_markdown"]
    assert "| a. raw backend |" in done.stdout
