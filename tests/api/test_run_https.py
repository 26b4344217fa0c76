"""``edge-app run`` serves HTTPS when api.tls is enabled, and says which file is wrong when not."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import requests
import yaml

from testkit.certs import make_test_certificates
from testkit.net import free_port


def _config(tmp_path, model_path, tls):
    port = free_port()
    config = {
        "device_id": "edge-https",
        "cameras": [{"id": "cam1", "source": "test://bars?width=320&height=240&fps=5"}],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"enabled": False},
        "api": {"host": "127.0.0.1", "port": port, "tls": tls},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path, port


def _run(path, log_path):
    log = open(log_path, "wb")
    return subprocess.Popen([sys.executable, "-m", "edge_app", "run", "-c", str(path)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=path.parent), log


def test_run_serves_https_from_api_tls(tmp_path, model_path):
    certs = make_test_certificates(tmp_path / "certs")
    path, port = _config(tmp_path, model_path, {"enabled": True, "certfile": str(certs.server_cert),
                                                 "keyfile": str(certs.server_key)})
    proc, log = _run(path, tmp_path / "run.log")
    try:
        deadline = time.monotonic() + 60
        answer = None
        while time.monotonic() < deadline and answer is None:
            assert proc.poll() is None, (tmp_path / "run.log").read_text()
            try:
                answer = requests.get(f"https://127.0.0.1:{port}/api/v1/status", verify=str(certs.ca), timeout=2)
            except requests.ConnectionError:
                time.sleep(0.3)
        assert answer is not None and answer.status_code == 200
        assert answer.json()["device_id"] == "edge-https"
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/healthz", timeout=3)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()


def test_run_with_an_unreadable_certificate_names_it_and_exits_2(tmp_path, model_path):
    """A missing certificate is a configuration problem: exit 2 (systemd does not restart it)."""
    missing = tmp_path / "missing-cert.pem"
    path, _ = _config(tmp_path, model_path, {"enabled": True, "certfile": str(missing)})
    result = subprocess.run([sys.executable, "-m", "edge_app", "run", "-c", str(path)],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2
    assert str(missing) in result.stderr and "Traceback" not in result.stderr
