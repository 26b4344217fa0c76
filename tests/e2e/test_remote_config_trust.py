"""The broker is not trusted (docs/fleet.md, "Who may configure an appliance"): a real ``edge-app run`` on a real Mosquitto
that accepts anonymous clients, attacked the way the issue found it could be.

The attack: ``mosquitto_pub -r -q 1 -t edge_app/<id>/config/desired -m
'{"version":1,"patch":{"api":{"token":"attacker-owned-token-1234567890"}}}'`` took over the REST API.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any, Dict

import paho.mqtt.client as mqtt
import pytest
import yaml
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.fleet_agent.agent import MAX_VERSION_STEP
from edge_app.fleet_protocol.desired_signature import signed_desired
from testkit.appliance import ApplianceProcess
from testkit.waiting import wait_until
from testkit.broker import MosquittoBroker, MqttCollector
from testkit.net import free_port

pytestmark = pytest.mark.slow

OWNER_TOKEN = "owner-token-0123456789abcdef"
ATTACK = {"api": {"token": "attacker-owned-token-1234567890"}}
KEY = "desired-key-0123456789abcdef0123456789"
BARS = "test://bars?width=160&height=120&fps=5"
EPOCH = "5e" * 16


def signed(version: int, patch: Dict[str, Any]) -> Dict[str, Any]:
    """A desired message for keyed1 as the fleet service signs it."""
    return signed_desired(KEY, "keyed1", EPOCH, int(time.time() * 1000), version, patch)


def _publish_anonymously(broker, topic: str, body: Dict[str, Any], client_prefix: str = "") -> None:
    """What ``mosquitto_pub -r -q 1`` does: no login, retained, QoS 1."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{client_prefix}attacker-{uuid.uuid4().hex[:8]}")
    client.connect(broker.host, broker.port)
    client.loop_start()
    try:
        client.publish(topic, json.dumps(body).encode(), qos=1, retain=True).wait_for_publish(5)
    finally:
        client.disconnect()
        client.loop_stop()


class Appliance:
    def __init__(self, tmp_path_factory, model_path, broker, device_id: str, client_prefix: str = "",
                 **sections: Any) -> None:
        config = {"device_id": device_id, "cameras": [{"id": "bars", "source": BARS, "detect": False}],
                  "model": {"path": str(model_path), "max_batch": 1},
                  "mqtt": {"host": broker.host, "port": broker.port, "keepalive": 5},
                  "api": {"host": "127.0.0.1", "port": free_port(), "token": OWNER_TOKEN}}
        for name, section in sections.items():
            config[name] = {**config.get(name, {}), **section}
        self.broker = broker
        self.root = f"edge_app/{device_id}"
        self.app = ApplianceProcess(config, tmp_path_factory.mktemp(device_id))
        self.client_prefix = client_prefix  # of the test's own clients, for a broker that admits ids by prefix
        self.reports = MqttCollector(broker.host, broker.port, f"{self.root}/config/reported",
                                     client_id=f"{client_prefix}collector-{uuid.uuid4().hex[:8]}").start()
        self.app.start()
        self.file_before = self.app.config_path.read_bytes()

    def desire(self, body: Dict[str, Any]) -> None:
        _publish_anonymously(self.broker, f"{self.root}/config/desired", body, self.client_prefix)

    def report(self, match, timeout_s: float = 20.0) -> Dict[str, Any]:
        message = self.reports.wait_for_message(f"{self.root}/config/reported", lambda m: match(m.json()), timeout_s)
        self.reports.clear()
        return message.json()

    def token_works(self, token: str) -> bool:
        return self.app.get("/api/v1/status", headers={"Authorization": f"Bearer {token}"}).status_code == 200

    def remote_config(self) -> Dict[str, Any]:
        return wait_until(lambda: (lambda rc: rc if rc and rc["broker_anonymous"] is not None else None)(
            self.app.get("/api/v1/status").json().get("remote_config")), 20, "the broker probe in the status")

    def close(self) -> None:
        self.reports.stop()
        self.app.close()


@pytest.fixture(scope="module")
def open_broker(tmp_path_factory):
    broker = MosquittoBroker(tmp_path_factory.mktemp("open-broker")).start()  # anonymous clients welcome
    yield broker
    broker.kill()


def _untouched(appliance: Appliance) -> None:
    assert appliance.token_works(OWNER_TOKEN)
    assert not appliance.token_works(ATTACK["api"]["token"])
    assert appliance.app.config_path.read_bytes() == appliance.file_before
    assert ATTACK["api"]["token"] not in appliance.app.config_path.read_text()


def test_by_default_the_issue_attack_changes_nothing_and_the_status_warns(tmp_path_factory, model_path, open_broker):
    appliance = Appliance(tmp_path_factory, model_path, open_broker, "default1")
    try:
        appliance.desire({"version": 1, "patch": ATTACK})
        # Remote configuration is off: nothing subscribes, so nothing is reported; give it time to go wrong.
        time.sleep(3)
        _untouched(appliance)
        assert appliance.reports.messages() == []
        assert "remote configuration is off" in appliance.app.log_path.read_text()
        status = appliance.remote_config()
        assert (status["enabled"], status["authentication"], status["broker_anonymous"]) == (False, None, True)
        assert any("without a login" in warning for warning in status["warnings"])
    finally:
        appliance.close()


def test_with_a_key_only_signed_messages_are_acted_on_and_never_on_the_api(tmp_path_factory, model_path, open_broker):
    appliance = Appliance(tmp_path_factory, model_path, open_broker, "keyed1",
                          fleet={"remote_config": True, "desired_key": KEY})
    try:
        # The issue's attack, unsigned: refused before anything reads it, no version taken.
        appliance.desire({"version": 1, "patch": ATTACK})
        report = appliance.report(lambda r: r["status"] == "rejected")
        assert report["version"] is None and [e["loc"] for e in report["errors"]] == ["sig"], report
        _untouched(appliance)

        # The fleet service's signed message is applied, version 1 included.
        patch = {"model": {"conf_threshold": 0.4}}
        appliance.desire(signed(1, patch))
        assert appliance.report(lambda r: r["version"] == 1)["status"] == "applied"
        assert yaml.safe_load(appliance.app.config_path.read_text())["model"]["conf_threshold"] == 0.4

        # Signed or not, the allow-list keeps api.*, mqtt.*, device_id, fleet.* and paths out of reach.
        before = appliance.app.config_path.read_bytes()
        for version, patch, loc in [(2, ATTACK, "api.token"), (3, {"api": {"host": "0.0.0.0"}}, "api.host"),
                                    (4, {"mqtt": {"port": 1}}, "mqtt.port"), (5, {"device_id": "other"}, "device_id"),
                                    (6, {"fleet": {"remote_config": False}}, "fleet.remote_config"),
                                    (7, {"model": {"path": "/tmp/x.onnx"}}, "model.path")]:
            appliance.desire(signed(version, patch))
            report = appliance.report(lambda r: r["version"] == version)
            assert report["status"] == "rejected" and loc in [e["loc"] for e in report["errors"]], report
        assert appliance.app.config_path.read_bytes() == before
        assert appliance.token_works(OWNER_TOKEN)

        # One signed message cannot pin the version near 2**53 either.
        far = 7 + MAX_VERSION_STEP + 1
        appliance.desire(signed(far, patch))
        assert [e["loc"] for e in appliance.report(lambda r: r["version"] == far)["errors"]] == ["version"]
        appliance.desire(signed(8, {"model": {"conf_threshold": 0.5}}))
        assert appliance.report(lambda r: r["version"] == 8)["status"] == "applied"

        status = appliance.remote_config()
        assert (status["enabled"], status["authentication"], status["refused"]) == (True, "signature", 1)
    finally:
        appliance.close()


def test_without_a_key_an_anonymous_broker_is_not_trusted(tmp_path_factory, model_path, open_broker):
    appliance = Appliance(tmp_path_factory, model_path, open_broker, "nokey1",
                          mqtt={"username": "nokey1", "password": "any-password"}, fleet={"remote_config": True})
    try:
        appliance.desire({"version": 1, "patch": {"model": {"conf_threshold": 0.4}}})
        report = appliance.report(lambda r: r["status"] == "rejected")
        assert report["version"] is None and [e["loc"] for e in report["errors"]] == ["mqtt"], report
        assert "without a login" in report["errors"][0]["msg"]
        assert appliance.app.config_path.read_bytes() == appliance.file_before
        status = appliance.remote_config()
        assert (status["enabled"], status["authentication"], status["broker_anonymous"]) == (True, None, True)
    finally:
        appliance.close()


def test_a_broker_that_admits_client_ids_by_prefix_is_not_taken_for_one_requiring_a_login(tmp_path_factory, model_path):
    # Mosquitto `clientid_prefixes edge-app-edge` with anonymous clients allowed: the probe's own
    # id was refused ("not authorised"), taken for "login required", and an anonymous desired
    # message was applied. The probe now connects with the appliance's id prefix and is let in.
    broker = MosquittoBroker(tmp_path_factory.mktemp("prefix-broker"), users={"edge-02": "edge-02-Pa55"},
                             allow_anonymous=True, extra_config=["clientid_prefixes edge-app-edge"]).start()
    appliance = Appliance(tmp_path_factory, model_path, broker, "edge-02", client_prefix="edge-app-edge-x-",
                          mqtt={"username": "edge-02", "password": "edge-02-Pa55"}, fleet={"remote_config": True})
    try:
        status = appliance.remote_config()
        assert (status["authentication"], status["broker_anonymous"]) == (None, True), status
        appliance.desire({"version": 1, "patch": {"model": {"conf_threshold": 0.4}}})
        report = appliance.report(lambda r: r["status"] == "rejected")
        assert report["version"] is None and [e["loc"] for e in report["errors"]] == ["mqtt"], report
        assert appliance.app.config_path.read_bytes() == appliance.file_before
    finally:
        appliance.close()
        broker.kill()
