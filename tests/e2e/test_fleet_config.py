"""``R/config/desired`` against a real ``edge-app run`` and a real Mosquitto (docs/fleet.md).

One appliance runs for the whole module; every case publishes the next desired version, retained,
and reads the retained ``R/config/reported``, the config file and ``GET /api/v1/config``.
"""
from __future__ import annotations

import json
import time
from typing import Any, Dict, Optional

import paho.mqtt.client as mqtt
import pytest
import yaml
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.mqtt.payloads import config_desired_payload, encode
from testkit.appliance import ApplianceProcess
from testkit.waiting import wait_until
from testkit.broker import MosquittoBroker, MqttCollector
from testkit.net import free_port

pytestmark = pytest.mark.slow

ROOT = "edge_app/fleet1"
DESIRED, REPORTED = f"{ROOT}/config/desired", f"{ROOT}/config/reported"
BARS = "test://bars?width=320&height=240&fps=10"
BROKER_PASSWORD = "br0ker-Pa55"


class FleetDevice:
    """The broker, the running appliance, a subscriber to its reports, and the next version."""

    def __init__(self, tmp_path_factory, model_path) -> None:
        self.broker = MosquittoBroker(tmp_path_factory.mktemp("broker"), users={"fleet1": BROKER_PASSWORD}).start()
        self.version = 0
        workdir = tmp_path_factory.mktemp("appliance")
        config = {
            "device_id": "fleet1",
            "cameras": [{"id": "bars", "source": BARS}],
            "model": {"path": str(model_path), "max_batch": 1},
            "mqtt": {"host": self.broker.host, "port": self.broker.port, "username": "fleet1", "password": BROKER_PASSWORD},
            "api": {"host": "127.0.0.1", "port": free_port()},
            # No desired_key: trusted because the broker refuses clients without a login.
            "fleet": {"remote_config": True},
        }
        self.app = ApplianceProcess(config, workdir)
        self.reports = MqttCollector(self.broker.host, self.broker.port, REPORTED, username="fleet1", password=BROKER_PASSWORD).start()
        self.start()

    def start(self) -> None:
        self.app.start()
        wait_until(lambda: self.app.camera_state("bars") == "streaming", 60, "the test camera to stream")

    def stop(self) -> None:
        self.app.terminate()
        self.app.close()

    def next_version(self) -> int:
        self.version += 1
        return self.version

    def publish(self, payload: bytes) -> None:
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"fleet-test-{time.monotonic_ns()}")
        client.username_pw_set("fleet1", BROKER_PASSWORD)
        client.connect(self.broker.host, self.broker.port)
        client.loop_start()
        try:
            client.publish(DESIRED, payload, qos=1, retain=True).wait_for_publish(5)
        finally:
            client.disconnect()
            client.loop_stop()

    def desire(self, version: Optional[int], patch: Any) -> None:
        self.publish(encode({"version": version, "patch": patch}))

    def reported(self, version: Optional[int], timeout_s: float = 30.0) -> Dict[str, Any]:
        """The next report for ``version`` (None: the version-less report of a malformed message)."""
        message = self.reports.wait_for_message(REPORTED, lambda m: m.json()["version"] == version, timeout_s)
        self.reports.clear()
        return message.json()

    def config_view(self) -> Dict[str, Any]:
        return self.app.get("/api/v1/config").json()

    def cameras(self):
        return self.config_view()["cameras"]


@pytest.fixture(scope="module")
def device(tmp_path_factory, model_path):
    fleet = FleetDevice(tmp_path_factory, model_path)
    yield fleet
    fleet.reports.stop()
    fleet.app.close()
    fleet.broker.kill()


def test_an_applied_desired_config_changes_the_file_and_the_running_appliance(device):
    version = device.next_version()
    cameras = [{**device.cameras()[0], "fps_limit": 2}]
    device.publish(encode(config_desired_payload(version, {"cameras": cameras})))
    report = device.reported(version)
    assert (report["status"], report["errors"]) == ("applied", []), report
    assert isinstance(report["ts"], float)
    assert yaml.safe_load(device.app.config_path.read_text())["cameras"][0]["fps_limit"] == 2
    assert device.cameras()[0]["fps_limit"] == 2
    # The running pipeline honours it: the camera delivers 10 fps, 2 of them are analysed. The rate
    # is measured over a window that still holds frames from before the change for a while, longer
    # on a loaded machine: wait for it to settle rather than for a fixed time.
    def settled():
        camera = next(c for c in device.app.get("/api/v1/cameras").json() if c["id"] == "bars")
        return camera if camera["fps"] > 5 and 0 < camera["analyzed_fps"] <= 2.6 else None

    wait_until(settled, 30, "the camera analysed at its new fps_limit of 2")


def _bars(**fields):
    return {"id": "bars", "source": BARS, "fps_limit": 2, **fields}


REJECTED = [
    ("schema", {"cameras": [_bars(fps_limit=-1)]}, "cameras.0.fps_limit", None),
    ("unknown key", {"model": {"conf_treshold": 0.3}}, "model.conf_treshold", None),
    ("gst source", {"cameras": [_bars(), {"id": "evil", "source": "gst:filesrc location=/etc/passwd ! appsink"}]},
     "cameras.1.source", None),
    ("file outside the media folders", {"cameras": [_bars(), {"id": "evil", "source": "/etc/passwd"}]}, "cameras.1.source", None),
    ("unsafe switch", {"api": {"allow_unsafe_sources": True}}, "api.allow_unsafe_sources", None),
    ("model outside its folder", {"model": {"labels": "/etc/hostname"}}, "model.labels", None),
    ("broker moved without the password", {"mqtt": {"port": 9}}, "mqtt.password", None),
    ("secret-bearing and invalid", {"mqtt": {"password": "n3w-S3cret!", "keepalive": "often"},
                                    "cameras": [_bars(), {"id": "door", "source": "rtsp://admin:Cam-S3cret@10.0.0.9/s", "fps_limit": -3}]},
     "mqtt.keepalive", ["n3w-S3cret!", "Cam-S3cret"]),
    ("patch not an object", [1, 2], "patch", None),
    # Outside the allow-list of what the broker may change (docs/fleet.md, "Who may configure an appliance").
    ("the api token", {"api": {"token": "attacker-owned-token-1234567890"}}, "api.token", ["attacker-owned-token-1234567890"]),
    ("the api address", {"api": {"host": "0.0.0.0", "token": "attacker-owned-token-1234567890"}}, "api.host", None),
    ("an mqtt setting", {"mqtt": {"keepalive": 25}}, "mqtt.keepalive", None),
    ("the device id", {"device_id": "other"}, "device_id", None),
    ("remote configuration itself", {"fleet": {"remote_config": False}}, "fleet.remote_config", None),
]


@pytest.mark.parametrize("case, patch, loc, secrets", REJECTED, ids=[case[0] for case in REJECTED])
def test_a_refused_desired_config_is_reported_and_changes_nothing(device, case, patch, loc, secrets):
    file_before, view_before = device.app.config_path.read_bytes(), device.config_view()
    version = device.next_version()
    device.desire(version, patch)
    report = device.reported(version)
    assert report["status"] == "rejected"
    assert loc in [error["loc"] for error in report["errors"]], report
    assert all(error["msg"] for error in report["errors"])
    for secret in secrets or ():
        assert secret not in json.dumps(report)
    assert device.app.config_path.read_bytes() == file_before
    assert device.config_view() == view_before


def test_a_secret_bearing_patch_is_applied_and_its_report_carries_no_secret(device):
    secret = "Cam-S3cret-2"
    version = device.next_version()
    door = {"id": "door", "source": f"rtsp://admin:{secret}@127.0.0.1:{free_port()}/s"}
    device.desire(version, {"cameras": [_bars(), door]})
    report = device.reported(version)
    assert report["status"] == "applied" and secret not in json.dumps(report), report
    assert yaml.safe_load(device.app.config_path.read_text())["cameras"][1]["source"] == door["source"]
    assert device.cameras()[1]["source"] == "rtsp://admin:***@" + door["source"].split("@", 1)[1]
    assert secret not in device.app.log_path.read_text()


@pytest.mark.parametrize("payload, why", [
    (b"{not json", "not valid JSON"),
    (b'{"version": "7", "patch": {}}', "version"),
    (b"\xff\xfe", "UTF-8"),
    (b'{"version": NaN, "patch": {}}', "not valid JSON"),
])
def test_a_malformed_desired_message_is_rejected_without_a_version(device, payload, why):
    file_before = device.app.config_path.read_bytes()
    device.publish(payload)
    report = device.reported(None)
    assert report["status"] == "rejected" and why in json.dumps(report["errors"]), report
    assert device.app.config_path.read_bytes() == file_before
    assert device.app.get("/healthz").status_code == 200


@pytest.mark.parametrize("offset", [0, -1], ids=["repeated", "older"])
def test_a_repeated_or_older_version_is_ignored(device, offset):
    file_before = device.app.config_path.read_bytes()
    device.desire(device.version + offset, {"model": {"conf_threshold": 0.9}})
    time.sleep(3)
    assert device.reports.messages() == []
    assert device.app.config_path.read_bytes() == file_before
    assert device.config_view()["model"]["conf_threshold"] != 0.9


def test_after_an_mqtt_change_the_new_connection_reports_and_keeps_listening(device):
    """A change of the mqtt section (the owner's, through the API: never the broker's) replaces the
    appliance's MQTT client; both subscriptions follow it."""
    response = device.app.request("PATCH", "/api/v1/config", json={"mqtt": {"keepalive": 25}})  # "***" stays
    assert response.status_code == 200, response.text
    assert yaml.safe_load(device.app.config_path.read_text())["mqtt"]["password"] == BROKER_PASSWORD
    version = device.next_version()
    device.desire(version, {"model": {"conf_threshold": 0.3}})
    assert device.reported(version)["status"] == "applied"

    states = MqttCollector(device.broker.host, device.broker.port, f"{ROOT}/cameras/bars/detect/state",
                           username="fleet1", password=BROKER_PASSWORD).start()
    try:
        for command, detect in (("OFF", False), ("ON", True)):
            mqtt_client = mqtt.Client(CallbackAPIVersion.VERSION2)
            mqtt_client.username_pw_set("fleet1", BROKER_PASSWORD)
            mqtt_client.connect(device.broker.host, device.broker.port)
            mqtt_client.loop_start()
            mqtt_client.publish(f"{ROOT}/cameras/bars/detect/set", command, qos=1).wait_for_publish(5)
            mqtt_client.disconnect()
            mqtt_client.loop_stop()
            states.wait_for_message(match=lambda m, command=command: m.payload == command.encode(), timeout_s=15)
            wait_until(lambda detect=detect: device.cameras()[0]["detect"] is detect, 15, f"detect {command}")
    finally:
        states.stop()


def test_a_device_that_was_offline_applies_the_latest_desired_version_when_it_comes_back(device):
    device.stop()
    device.next_version()  # published while the device is away: superseded by the next one
    device.desire(device.version, {"cameras": [_bars(fps_limit=4)]})
    version = device.next_version()
    device.desire(version, {"cameras": [_bars(fps_limit=3)]})
    device.reports.clear()
    device.start()
    report = device.reported(version)
    assert report["status"] == "applied", report
    assert yaml.safe_load(device.app.config_path.read_text())["cameras"][0]["fps_limit"] == 3

    # Started again, the retained desired message arrives again and is recognised as done.
    device.stop()
    device.reports.clear()
    device.start()
    device.reports.wait_for_message(REPORTED, timeout_s=15)
    time.sleep(3)
    # Only the saved outcome is published again on start: same version, same timestamp.
    assert [m.json() for m in device.reports.messages()] == [report]
