"""``edge-app fleet -c FLEET.yaml`` as a process: config errors, HTTPS with a token, SIGTERM."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import requests
import yaml

from testkit.waiting import wait_for
from testkit.certs import make_test_certificates
from testkit.net import free_port

TOKEN = "fleet-token-0123456789abcdef"


def _start(tmp_path, config: dict) -> subprocess.Popen:
    path = tmp_path / "FLEET.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    log = open(tmp_path / "fleet.log", "wb")
    return subprocess.Popen([sys.executable, "-m", "edge_app", "fleet", "-c", str(path)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)


@pytest.mark.parametrize("config, problem", [
    ({"database": {"url": "mysql://x"}}, "database.url: Value error, must start with sqlite:/// or postgresql://"),
    ({"topic_prefix": "a/#"}, "topic_prefix:"),
    ({"mqtt": {"port": 0}}, "mqtt.port:"),
    ({"api": {"host": "0.0.0.0"}}, "api.token: required when api.host"),
    ({"databse": {}}, "databse: unknown key (did you mean database?)"),
])
def test_an_invalid_fleet_config_exits_2_naming_the_field(tmp_path, config, problem):
    path = tmp_path / "FLEET.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run([sys.executable, "-m", "edge_app", "fleet", "-c", str(path)], capture_output=True, text=True,
                          timeout=30, cwd=tmp_path)
    assert done.returncode == 2
    assert problem.replace("Value error, ", "") in done.stderr
    assert "Traceback" not in done.stderr


def test_fleet_serves_https_with_a_token_and_stops_on_sigterm(tmp_path, mosquitto_broker, sim_devices):
    certs = make_test_certificates(tmp_path / "certs")
    port = free_port()
    process = _start(tmp_path, {
        "mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port},
        "topic_prefix": "site1",
        "api": {"host": "127.0.0.1", "port": port, "token": TOKEN,
                "tls": {"enabled": True, "certfile": str(certs.server_cert), "keyfile": str(certs.server_key)}},
    })
    try:
        url = f"https://127.0.0.1:{port}"
        wait_for(lambda: _answers(url + "/healthz", certs.ca), 20, "the fleet API")
        assert requests.get(url + "/api/v1/devices", verify=str(certs.ca), timeout=5).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        sim_devices("site1", "edge-a")
        devices = wait_for(lambda: requests.get(url + "/api/v1/devices", headers=auth, verify=str(certs.ca),
                                                timeout=5).json()["devices"], 10, "edge-a in the inventory")
        assert devices[0]["device_id"] == "edge-a"
        assert requests.get(url + "/readyz", verify=str(certs.ca), timeout=5).json() == {"ready": True}
        assert (tmp_path / "fleet.db").exists()  # the default database, relative to the working directory
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
        assert time.monotonic() - began < 5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = (tmp_path / "fleet.log").read_text()
    assert "Traceback" not in log
    assert "stopping the fleet service" in log


def test_fleet_says_which_database_it_cannot_open(tmp_path, mosquitto_broker):
    process = _start(tmp_path, {"mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port},
                                "database": {"url": "postgresql://fleet:pw@127.0.0.1:1/fleet"},
                                "api": {"port": free_port()}})
    assert process.wait(30) == 1
    log = (tmp_path / "fleet.log").read_text()
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/fleet" in log
    assert "pw@" not in log and "Traceback" not in log


def _answers(url: str, ca) -> bool:
    try:
        return requests.get(url, verify=str(ca), timeout=2).status_code == 200
    except requests.RequestException:
        return False
