"""SIGTERM during a TensorRT engine build cancels the build (stand-in TensorRT, NOT TensorRT).

The stand-in's build is made slow (one second per progress step, as a Jetson's build of several
minutes would be) so the signal lands in the middle of it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

from edge_app.appliance.appliance import Appliance
from edge_app.config.schema import AppConfig
from testkit.appliance import ApplianceProcess
from testkit.waiting import wait_until
from testkit.net import free_port
from tests.support.notify import NotifySocket
from tests.tensorrt.conftest import STANDIN_DIR
from testkit.tensorrt_standin.host_cuda import HostMemoryCudaDevice

STEP_S = 1.0


@pytest.fixture
def slow_standin_build(standin_trt, monkeypatch):
    import edge_app.cuda
    from edge_app.detect.tensorrt import backend
    from tensorrt import _build_steps

    monkeypatch.setattr(edge_app.cuda, "available_adapters", lambda: ["host-memory stand-in"])
    monkeypatch.setattr(backend, "open_device", lambda: HostMemoryCudaDevice())
    real_step = _build_steps._Monitor.step

    def slow_step(self, name, step):
        time.sleep(STEP_S)
        return real_step(self, name, step)

    monkeypatch.setattr(_build_steps._Monitor, "step", slow_step)
    return standin_trt


def test_stopping_the_appliance_cancels_its_engine_build(slow_standin_build, model_path, tmp_path):
    config = AppConfig(cameras=[{"id": "bars", "source": "test://bars"}],
                       model={"path": str(model_path), "backend": "tensorrt", "engine_dir": str(tmp_path / "engines")},
                       mqtt={"enabled": False})
    appliance = Appliance(config)
    outcome = {}

    def start():
        try:
            appliance.start()
        except BaseException as err:
            outcome["error"] = err

    loader = threading.Thread(target=start)
    loader.start()
    wait_until(lambda: (appliance.reads.engine_build() or {}).get("state") == "building", 30, "the build to begin")
    stopped_s = time.monotonic()
    appliance.stop(timeout_s=2.0)
    loader.join(STEP_S + 2.0)
    assert not loader.is_alive(), "the build must end at its next progress step"
    assert time.monotonic() - stopped_s < STEP_S + 2.5
    assert "cancelled" in str(outcome.get("error")), outcome
    assert not list((tmp_path / "engines").glob("*.engine"))
    assert appliance.reads.status().cameras[0].state == "connecting" and not appliance.reads.cameras()[0].frames_captured


LAUNCHER = f"""
import sys, time
sys.path.insert(0, {str(STANDIN_DIR)!r})
from tensorrt import _build_steps
from testkit.tensorrt_standin.process_cuda import use_host_memory_cuda
from edge_app.cli import main

use_host_memory_cuda({{}})
real_step = _build_steps._Monitor.step

def slow_step(self, name, step):
    time.sleep({STEP_S})
    return real_step(self, name, step)

_build_steps._Monitor.step = slow_step
sys.exit(main(["run", "-c", sys.argv[1]]))
"""


@pytest.mark.slow
def test_sigterm_during_an_engine_build_of_edge_app_run_cancels_it(model_path, tmp_path, repo_root):
    engines = tmp_path / "engines"
    config = {"device_id": "build", "cameras": [{"id": "bars", "source": "test://bars"}],
              "model": {"path": str(model_path), "backend": "tensorrt", "engine_dir": str(engines)},
              "mqtt": {"enabled": False}, "api": {"port": free_port()},
              # it runs in the checkout (for the stand-in's import path): keep its files in tmp_path
              "events": {"dir": str(tmp_path / "events")}}
    app = ApplianceProcess(config, tmp_path)
    log = open(app.log_path, "wb")
    app._log = log
    notify = NotifySocket(f"@edge-app-test-{uuid.uuid4().hex}")
    env = dict(os.environ, NOTIFY_SOCKET=notify.address, WATCHDOG_USEC="2000000")
    app.proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(app.config_path)], stdout=log,
                                stderr=subprocess.STDOUT, cwd=repo_root, env=env)
    try:
        wait_until(app._api_up, 60, "the API to answer")
        wait_until(lambda: (app.get("/api/v1/status").json().get("engine_build") or {}).get("state") == "building",
                   30, "the engine build to begin")
        # systemd is asked for more start-up time while the build runs.
        extend = wait_until(lambda: notify.lines("EXTEND_TIMEOUT_USEC"), 5, "EXTEND_TIMEOUT_USEC")
        assert int(extend[0][1].split("=")[1]) >= 30_000_000
        started_s = time.monotonic()
        app.proc.send_signal(signal.SIGTERM)
        code = app.proc.wait(10)
        elapsed_s = time.monotonic() - started_s
        assert code == 0 and elapsed_s < 5.0, (code, elapsed_s, app.log_tail())
        assert "was cancelled" in app.log_tail(), app.log_tail()
        assert not list(engines.glob("*.engine")), "a cancelled build leaves no engine behind"
        # systemd was never told the service was ready.
        assert any("building the TensorRT engine" in line for _, line in notify.lines("STATUS"))
        assert notify.lines("STOPPING") and not notify.lines("READY") and not notify.lines("WATCHDOG")
    finally:
        app.close()
        notify.close()
    with pytest.raises(requests.ConnectionError):
        requests.get(app.base_url + "/healthz", timeout=1)
