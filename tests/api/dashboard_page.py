"""The dashboard's scripts run by Node (tests/api/js/dashboard_harness.mjs) against a real API."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional


import edge_app.api
from edge_app.http_server.static_pages import SHARED_STATIC_DIR
from testkit.skips import require_tool

STATIC_DIR = Path(edge_app.api.__file__).parent / "static"
HARNESS = Path(__file__).parent / "js" / "dashboard_harness.mjs"


def _node() -> str:
    return require_tool("node")


def run_dashboard(api, scenario: str, token: str = "", env: Optional[Dict[str, str]] = None) -> dict:
    """The page's own scripts, run against the real API; what the page showed at each step.
    ``env`` is added to the harness's environment."""
    args = [_node(), str(HARNESS), api.url, str(STATIC_DIR / "index.html"), scenario] + ([token] if token else [])
    env = {**os.environ, "SHARED_STATIC_DIR": str(SHARED_STATIC_DIR), **(env or {})}
    result = subprocess.run(args, capture_output=True, text=True, timeout=90, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


class LogicCalls:
    """One Node process answering calls to the pure functions of static/logic.js and static/zone_rules.js
    (or of ``scripts``, other files of the page that add pure functions to globalThis.EdgeLogic)."""

    def __init__(self, *scripts: str) -> None:
        files = scripts or ("logic.js", "zone_rules.js")
        command: List[str] = [_node(), str(HARNESS), "--calls", *(str(STATIC_DIR / name) for name in files)]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self, function: str, *args: Any) -> Any:
        """``function(*args)`` in logic.js, with JSON arguments; its JSON result."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"function": function, "args": args}) + "\n")
        self._process.stdin.flush()
        answer = json.loads(self._process.stdout.readline())
        assert "error" not in answer, answer["error"]
        return answer["result"]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=10)
