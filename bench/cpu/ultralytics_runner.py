"""Section d: Ultralytics on the same model and clip, in its own venv and process."""
from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)


def _skipped(reason: str) -> dict:
    log.info("Ultralytics skipped: %s", reason)
    return {"status": "skipped", "reason": reason}


def measure_ultralytics(python: Path, model_path: Path, clip: Path, window_s: float, work_dir: Path,
                        timeout_s: float = 300.0) -> dict:
    if not Path(python).exists():
        return _skipped(f"{python} not found (see bench/README.md to create the Ultralytics venv)")
    worker = Path(__file__).with_name("ultralytics_worker.py")
    config_dir = Path(work_dir) / "ultralytics-config"
    config_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, YOLO_OFFLINE="1", YOLO_VERBOSE="False", YOLO_CONFIG_DIR=str(config_dir))
    command = [str(python), str(worker), "--model", str(Path(model_path).resolve()), "--clip", str(Path(clip).resolve()),
               "--seconds", str(window_s)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s + window_s, env=env, cwd=work_dir)
    except subprocess.TimeoutExpired:
        return _skipped(f"the Ultralytics run took longer than {timeout_s + window_s:.0f} s")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return _skipped(f"the Ultralytics run failed (exit {done.returncode}): {tail[:300]}")
    result = json.loads(lines[-1])
    result["model"] = Path(model_path).name
    log.info("Ultralytics: %.2f frames/s", result["frames_per_s"])
    return result
