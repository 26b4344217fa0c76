"""A real RTSP server: ``rtsp_server.py`` (gst-rtsp-server) run by the system python.

``RtspServer({"cam": clip_path, ...}, work_dir, port=None)`` loops each mount's H.264 clip forever
without re-encoding. ``server.url("cam")`` is ``rtsp://127.0.0.1:<port>/cam``; ``server.stop()``
kills it and ``server.start()`` brings it back on the *same* port (for reconnect tests);
``with server.frozen():`` stops it sending while its connections stay open. The tests' fixtures
are in ``tests/support/rtsp.py``.

The venv python has no GObject bindings, hence the subprocess; ``EDGE_APP_SYSTEM_PYTHON``
overrides ``/usr/bin/python3``. Without GStreamer's RTSP server the tests skip (fail on CI).
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Mapping, Optional

from testkit.net import free_port, port_accepts
from testkit.skips import missing

SYSTEM_PYTHON = os.environ.get("EDGE_APP_SYSTEM_PYTHON", "/usr/bin/python3")
SERVER_SCRIPT = Path(__file__).with_name("rtsp_server.py")
HOST = "127.0.0.1"


def require_gst_rtsp_server() -> None:
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import gi; gi.require_version('GstRtspServer', '1.0'); "
                              "from gi.repository import GstRtspServer"],
        capture_output=True, text=True,
    )
    if probe.returncode != 0:
        missing(f"{SYSTEM_PYTHON} cannot import GstRtspServer (run scripts/system-deps.sh): "
                f"{probe.stderr.strip().splitlines()[-1:]}")


class RtspServer:
    """One gst-rtsp-server process on a fixed port, serving looping clips."""

    def __init__(self, mounts: Mapping[str, Path], work_dir: Path, port: Optional[int] = None) -> None:
        if not mounts:
            raise ValueError("an RTSP server needs at least one mount point")
        self.mounts: Dict[str, Path] = {name.strip("/"): Path(path) for name, path in mounts.items()}
        self.host = HOST
        self.port = port or free_port()
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / f"rtsp-server-{self.port}.log"
        self._process: Optional[subprocess.Popen] = None

    def url(self, mount: str) -> str:
        name = mount.strip("/")
        if name not in self.mounts:
            raise KeyError(f"no mount point {name!r}; have {sorted(self.mounts)}")
        return f"rtsp://{self.host}:{self.port}/{name}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """SIGSTOP for the ``with`` block: connections stay open but nothing arrives (a hung camera)."""
        assert self._process is not None, "the server is not running"
        os.kill(self._process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self._process.pid, signal.SIGCONT)

    def start(self, timeout_s: float = 20.0) -> "RtspServer":
        """Start (or restart on the same port) and wait until the port accepts connections."""
        if self.running:
            return self
        deadline_s = time.monotonic() + timeout_s
        while True:
            self._launch()
            if self._wait_ready(deadline_s):
                return self
            # Most likely the port is still held by the previous instance: try again shortly.
            self._kill()
            if time.monotonic() >= deadline_s:
                raise RuntimeError(f"RTSP server did not start on port {self.port}:\n{self.log_tail()}")
            time.sleep(0.3)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the server; clients see the connection drop."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self._kill()

    def log_tail(self, lines: int = 20) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _launch(self) -> None:
        args = [SYSTEM_PYTHON, str(SERVER_SCRIPT), "--port", str(self.port), "--work-dir", str(self.work_dir)]
        for name, path in self.mounts.items():
            args += ["--mount", f"{name}={path}"]
        with open(self.log_path, "ab") as log:
            # A fresh process group: killing the server also kills the ffmpeg it may be running.
            self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def _wait_ready(self, deadline_s: float) -> bool:
        assert self._process is not None
        while time.monotonic() < deadline_s:
            if self._process.poll() is not None:
                return False
            if f"READY {self.port}" in self.log_path.read_text(errors="replace") and port_accepts(self.host, self.port):
                return True
            time.sleep(0.05)
        return False

    def _kill(self) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._process.wait(5)
        self._process = None
