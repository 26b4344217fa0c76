"""The systemd notify protocol of ``edge-app run``, against a real AF_UNIX datagram socket.

systemd is not needed: the test binds the socket itself, passes it in ``$NOTIFY_SOCKET`` with
a watchdog in ``$WATCHDOG_USEC`` and reads what a real ``edge-app run`` subprocess sends.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
import requests
import yaml

from edge_app.process.systemd import SystemdNotifier, watchdog_interval_s
from testkit.waiting import wait_until
from tests.support.notify import NotifySocket
from testkit.net import free_port


def test_notifier_speaks_to_path_and_abstract_sockets_and_never_raises(request):
    short_dir = tempfile.mkdtemp(prefix="n", dir="/tmp")  # a socket path must stay short
    request.addfinalizer(lambda: shutil.rmtree(short_dir, ignore_errors=True))
    for address in (os.path.join(short_dir, "notify"), f"@edge-app-test-{uuid.uuid4().hex}"):
        listener = NotifySocket(address)
        try:
            notifier = SystemdNotifier.from_environment({"NOTIFY_SOCKET": address})
            assert notifier.ready("1.0 fps") and notifier.watchdog() and notifier.extend_timeout(30)
            wait_until(lambda: len(listener.messages) == 3, 5, "three datagrams")
            assert [m for _, m in listener.messages] == ["READY=1\nSTATUS=1.0 fps", "WATCHDOG=1", "EXTEND_TIMEOUT_USEC=30000000"]
        finally:
            listener.close()
    gone = SystemdNotifier(os.path.join(short_dir, "nobody-listens"))
    assert gone.enabled and not gone.watchdog() and not gone.watchdog()
    assert not SystemdNotifier.from_environment({}).enabled and not SystemdNotifier(None).ready()


def test_watchdog_interval_is_half_of_watchdog_usec_for_this_process_only():
    assert watchdog_interval_s({"WATCHDOG_USEC": "4000000"}, pid=42) == 2.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "42"}, pid=42) == 2.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "7"}, pid=42) is None
    assert watchdog_interval_s({}, pid=42) is None and watchdog_interval_s({"WATCHDOG_USEC": "x"}, pid=42) is None


# A real `edge-app run`; once the trigger file exists, inference hangs the way a wedged GPU
# does, and STALL_AFTER_S is shortened so the test does not wait 20 s for the stall.
LAUNCHER = """
import sys, time
from pathlib import Path
import edge_app.pipeline.stall_watch as stall_watch
from edge_app.detect.onnxruntime_backend import OnnxRuntimeDetector
from edge_app.cli import main

stall_watch.STALL_AFTER_S = 2.0
trigger = Path(sys.argv[2])
real_infer = OnnxRuntimeDetector.infer

def infer(self, batch):
    while trigger.exists():
        time.sleep(0.05)
    return real_infer(self, batch)

OnnxRuntimeDetector.infer = infer
sys.exit(main(["run", "-c", sys.argv[1]]))
"""


@pytest.mark.slow
def test_edge_app_run_sends_ready_watchdog_status_and_stopping_and_stops_pinging_when_stalled(tmp_path, model_path):
    address = f"@edge-app-test-{uuid.uuid4().hex}"
    listener = NotifySocket(address)
    port = free_port()
    config = {"device_id": "notify", "cameras": [{"id": "bars", "source": "test://bars?width=320&height=240&fps=10"}],
              "model": {"path": str(model_path)}, "mqtt": {"enabled": False}, "api": {"port": port}}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    trigger = tmp_path / "hang-inference"
    env = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC="1000000", PYTHONUNBUFFERED="1")
    log_path = tmp_path / "edge-app.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(config_path), str(trigger)], stdout=log,
                                stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        ready = wait_until(lambda: listener.lines("READY"), 60, "READY=1")
        # READY comes once the model is loaded and the API listens.
        assert requests.get(url + "/healthz", timeout=2).status_code == 200
        assert "model" in log_path.read_text() and "loaded" in log_path.read_text()
        wait_until(lambda: len([t for t, _ in listener.lines("WATCHDOG") if t > ready[0][0]]) >= 4, 10, "watchdog pings")
        pings = [t for t, _ in listener.lines("WATCHDOG")]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        assert 0.4 <= sorted(gaps)[len(gaps) // 2] <= 0.7, f"pings must come at about half of WATCHDOG_USEC: {gaps}"
        assert max(gaps) < 1.0, f"a gap of WATCHDOG_USEC would make systemd restart the service: {gaps}"
        status = wait_until(lambda: [line for _, line in listener.lines("STATUS") if "bars streaming" in line and " fps" in line],
                            15, "a STATUS line with fps and camera states")
        assert status[-1].startswith("STATUS=") and "STALLED" not in status[-1]

        trigger.touch()
        stalled = wait_until(lambda: requests.get(url + "/readyz", timeout=2).status_code == 503, 15, "/readyz to report the stall")
        assert stalled
        hung_at = time.monotonic()
        body = requests.get(url + "/readyz", timeout=2).json()
        assert any("stalled" in reason for reason in body["reasons"]), body
        pipeline = requests.get(url + "/api/v1/status", timeout=2).json()["pipeline"]
        assert pipeline["stalled"] is True and pipeline["stall_reason"] and pipeline["last_batch_age_s"] >= 2.0
        assert "edge_app_pipeline_stalled 1.0" in requests.get(url + "/metrics", timeout=2).text
        time.sleep(2.5)
        assert not [t for t, _ in listener.lines("WATCHDOG") if t > hung_at + 0.6], "no WATCHDOG=1 while stalled"
        assert any("STALLED" in line for _, line in listener.lines("STATUS"))

        trigger.unlink()
        wait_until(lambda: requests.get(url + "/readyz", timeout=2).status_code == 200, 15, "recovery")
        recovered_at = time.monotonic()
        wait_until(lambda: [t for t, _ in listener.lines("WATCHDOG") if t > recovered_at], 5, "pings again")

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert listener.lines("STOPPING"), listener.messages
        stopping_at = listener.lines("STOPPING")[0][0]
        assert not [t for t, _ in listener.lines("WATCHDOG") if t > stopping_at + 0.1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        listener.close()
