"""The README's first command, run as a new user runs it: ``./scripts/demo.sh`` on a fresh clone.

The clone (of this checkout's HEAD) has the sample models and images as ``../shared`` beside it,
as the README says, and no ``.venv``: the script makes one and installs what the README's line
installs, nothing more. Its state folder starts empty. The demo must then serve ``/healthz``,
publish detections, store an event, refuse a second start on the same port with a sentence saying
what to do, stop cleanly within 10 s of a SIGTERM to the script (what a service manager sends) or
of Ctrl-C, leaving no process and no port behind, and leave the clone as git cloned it.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import requests

from testkit import skips
from testkit.appliance import default_stop_signals
from testkit.broker import MqttCollector
from testkit.net import free_port, port_accepts
from testkit.paths import shared_dir
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

#: a fresh venv and `pip install -e .[opencv]` from a wheel cache take about a minute on 2 cores
SETUP_TIMEOUT_S = 900
#: what a stop promises: Ctrl-C, then the port is free again
STOP_TIMEOUT_S = 10
TOOLS = ("git", "ffmpeg", "mosquitto")


def _need_tools() -> None:
    missing = [tool for tool in TOOLS if shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin") is None]
    if missing:
        skips.missing(f"the demo needs {', '.join(missing)} (scripts/system-deps.sh installs them)")


class Demo:
    """One ``./scripts/demo.sh`` in its own session, its output in a file."""

    def __init__(self, clone: Path, env: Dict[str, str], log: Path) -> None:
        self.log = log
        self._out = log.open("wb")
        # SIGINT and SIGTERM at their defaults, as a terminal starts a command: a test run started
        # in the background of a script has SIGINT ignored, the demo would inherit that, and
        # edge-app rightly keeps an ignored signal ignored (Ctrl-C would then do nothing).
        self.proc = subprocess.Popen(["./scripts/demo.sh"], cwd=clone, env=env, stdout=self._out,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=default_stop_signals)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self) -> str:
        return "\n".join(line for line in self.output().splitlines() if not line.startswith("WARNING: Location"))[-4000:]

    def processes_left(self) -> List[str]:
        """Every process still in the script's process group (the appliance, the private broker)."""
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) == self.proc.pid:
                    left.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except (ProcessLookupError, FileNotFoundError, PermissionError):
                continue
        return left

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        self._out.close()


def _wait_healthy(demo: Demo, port: int) -> None:
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    while time.monotonic() < deadline:
        assert demo.proc.poll() is None, f"./scripts/demo.sh ended with {demo.proc.returncode}:\n{demo.tail()}"
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    raise AssertionError(f"/healthz did not answer within {SETUP_TIMEOUT_S} s:\n{demo.tail()}")


def _check_running_demo(demo: Demo, api_port: int, mqtt_port: int) -> None:
    _wait_healthy(demo, api_port)
    assert f"dashboard on http://127.0.0.1:{api_port}/" in demo.output()  # the banner names the real port
    collector = MqttCollector("127.0.0.1", mqtt_port, "+/demo/cameras/demo/detections").start(timeout_s=10)
    try:
        collector.wait_for(lambda messages: any(m.json()["detections"] for m in messages), timeout_s=60)
    finally:
        collector.stop()
    # the dashboard's API needs no token on loopback
    wait_for(lambda: requests.get(f"http://127.0.0.1:{api_port}/api/v1/events", timeout=5).json()["events"],
             timeout_s=90, what="an event stored by the demo")


def _stop(demo: Demo, api_port: int, private_broker_port: Optional[int], to_group: bool, signum: int) -> None:
    """``to_group``: the signal goes to every process of the script's group, as Ctrl-C in a terminal does."""
    started = time.monotonic()
    if to_group:
        os.killpg(demo.proc.pid, signum)
    else:
        os.kill(demo.proc.pid, signum)
    try:
        demo.proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # Where every thread is: the appliance logs its stacks on SIGUSR1 (docs/commands.md).
        os.kill(demo.proc.pid, signal.SIGUSR1)
        time.sleep(2)
        stacks = demo.output().rpartition("SIGUSR1: the stacks")[2][:12000]
        raise AssertionError(f"./scripts/demo.sh still runs {STOP_TIMEOUT_S} s after the signal:\n{demo.tail()}\n"
                             f"its threads:{stacks}") from None
    _wait_all_gone(demo, started)
    assert not port_accepts("127.0.0.1", api_port)
    assert private_broker_port is None or not port_accepts("127.0.0.1", private_broker_port)
    assert time.monotonic() - started <= STOP_TIMEOUT_S
    # the appliance stopped as it should (events ended, files closed), not cut short by a second signal
    assert demo.proc.returncode == 0 and "edge-app stopped" in demo.output(), demo.tail()


def _wait_all_gone(demo: Demo, started: float) -> None:
    left = demo.processes_left()
    while left and time.monotonic() - started < STOP_TIMEOUT_S:
        time.sleep(0.1)
        left = demo.processes_left()
    assert not left, f"left running {STOP_TIMEOUT_S} s after the signal: {left}"


@pytest.mark.timeout(SETUP_TIMEOUT_S + 600)
def test_the_readme_demo_runs_on_a_fresh_clone_and_stops_on_sigterm(tmp_path, repo_root, model_path, images_dir,
                                                                   mosquitto_factory):
    _need_tools()
    clone = tmp_path / "edge-app"
    subprocess.run(["git", "clone", "-q", str(repo_root), str(clone)], check=True, timeout=120)
    (tmp_path / "shared").symlink_to(shared_dir(), target_is_directory=True)  # ../shared, as the README says
    env = {key: value for key, value in os.environ.items()
           if key not in ("EDGE_APP_SHARED", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    api_port, mqtt_port = free_port(), free_port()
    env.update(EDGE_APP_DEMO_STATE=str(tmp_path / "state"), EDGE_APP_DEMO_PORT=str(api_port),
               EDGE_APP_DEMO_MQTT_PORT=str(mqtt_port))

    # No broker listens: the script starts a private one, which goes too when the appliance stops.
    demo = Demo(clone, env, tmp_path / "demo.log")
    try:
        _check_running_demo(demo, api_port, mqtt_port)
        assert f"started a private Mosquitto on 127.0.0.1:{mqtt_port}" in demo.output()

        second = subprocess.run(["./scripts/demo.sh"], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
        assert second.returncode == 1, second.stdout[-2000:] + second.stderr[-2000:]
        assert f"port {api_port} on 127.0.0.1 is taken" in second.stderr
        assert f"EDGE_APP_DEMO_PORT={api_port + 1} ./scripts/demo.sh" in second.stderr

        _stop(demo, api_port, mqtt_port, to_group=False, signum=signal.SIGTERM)
    finally:
        demo.kill()

    # A broker already listens: the port asked for is written into the kept configuration; Ctrl-C.
    broker = mosquitto_factory()
    env["EDGE_APP_DEMO_MQTT_PORT"] = str(broker.port)
    demo = Demo(clone, env, tmp_path / "demo-again.log")
    try:
        _check_running_demo(demo, api_port, broker.port)
        assert "private Mosquitto" not in demo.output()
        _stop(demo, api_port, None, to_group=True, signum=signal.SIGINT)
        assert broker.running  # not the demo's to stop
    finally:
        demo.kill()

    # Without the sample folder the script says where the model comes from, and starts nothing.
    (tmp_path / "empty").mkdir()
    bare = subprocess.run(["./scripts/demo.sh"], cwd=clone, capture_output=True, text=True, timeout=600,
                          env={**env, "EDGE_APP_SHARED": str(tmp_path / "empty"), "EDGE_APP_DEMO_STATE": str(tmp_path / "bare")})
    assert bare.returncode == 1 and "No model" in bare.stderr and "docs/demo.md" in bare.stderr, bare.stderr[-2000:]
    assert (clone / "docs" / "demo.md").exists()

    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == "", f"the demo changed the clone:\n{status.stdout}"
