"""The dashboard's scripts run by Node (tests/api/js/dashboard_harness.mjs) against a real API."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, List

import pytest

import edge_app.api

STATIC_DIR = Path(edge_app.api.__file__).parent / "static"
HARNESS = Path(__file__).parent / "js" / "dashboard_harness.mjs"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    return node


def run_dashboard(api, scenario: str, token: str = "") -> dict:
    """The page's own scripts, run against the real API; what the page showed at each step."""
    args = [_node(), str(HARNESS), api.url, str(STATIC_DIR / "index.html"), scenario] + ([token] if token else [])
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def call_logic(function: str, *args: Any) -> Any:
    """One pure function of static/logic.js called with JSON arguments; its JSON result."""
    command: List[str] = [_node(), str(HARNESS), "--call", str(STATIC_DIR / "logic.js"), function, json.dumps(args)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
