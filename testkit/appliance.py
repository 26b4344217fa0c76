"""Running ``edge-app run`` as a real subprocess, the way systemd runs it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

import requests
import yaml

from testkit.waiting import wait_until


def default_stop_signals() -> None:
    """``preexec_fn`` for the appliance's process: SIGINT and SIGTERM as systemd starts a service,
    at their defaults. A test run started with ``&`` from a script has SIGINT ignored, the child
    would inherit that, and edge-app rightly keeps an ignored signal ignored."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


class ApplianceProcess:
    def __init__(self, config: Dict[str, Any], workdir: Path):
        self.config = config
        self.workdir = workdir
        self.config_path = workdir / "config.yaml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.log_path = workdir / "edge-app.log"
        self.proc: Optional[subprocess.Popen] = None
        api = config.get("api", {})
        self.base_url = f"http://127.0.0.1:{api.get('port', 8080)}"
        self.token = api.get("token")

    def start(self) -> "ApplianceProcess":
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "edge_app", "run", "-c", str(self.config_path)],
                                     stdout=self._log, stderr=subprocess.STDOUT, cwd=self.workdir, env=env,
                                     preexec_fn=default_stop_signals)
        wait_until(self._api_up, 60, f"the API of edge-app to answer (log: {self.log_tail()})")
        return self

    def _api_up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"edge-app exited with {self.proc.returncode}: {self.log_tail()}")
        try:
            return requests.get(self.base_url + "/healthz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def get(self, path: str, **kwargs) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if self.token:
            headers.setdefault("Authorization", f"Bearer {self.token}")
        return requests.get(self.base_url + path, headers=headers, timeout=10, **kwargs)

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if self.token:
            headers.setdefault("Authorization", f"Bearer {self.token}")
        return requests.request(method, self.base_url + path, headers=headers, timeout=30, **kwargs)

    def camera_state(self, camera_id: str) -> Optional[str]:
        for cam in self.get("/api/v1/cameras").json():
            if cam["id"] == camera_id:
                return cam["state"]
        return None

    def terminate(self, timeout_s: float = 10.0) -> float:
        """SIGTERM; returns how long the process took to exit."""
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout_s)
        return time.monotonic() - start

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> "ApplianceProcess":
        """Started (and closed again should the start fail); closed when the block ends."""
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()
