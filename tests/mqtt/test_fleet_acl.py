"""The broker set-up of docs/fleet.md, for real: configs/fleet/mosquitto.conf and configs/fleet/acl
as shipped (only the file paths and the port changed), TLS on, accounts made with mosquitto_passwd
the way the documentation says.

Appliance A may publish only under its own root and read only its own desired configuration and
commands; the fleet account reads the whole fleet and writes desired configurations.
"""
from __future__ import annotations

import getpass
import inspect
import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import List, Optional, Tuple

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import MqttPublisher
from edge_app.mqtt.payloads import config_desired_payload, encode
from edge_app.mqtt.topic_docs import TOPIC_DOCS
from edge_app.mqtt.topics import Topics
from testkit.certs import make_test_certificates
from testkit.broker import MOSQUITTO, MOSQUITTO_PASSWD
from testkit.net import free_port, port_accepts
from testkit.skips import require_tool

REPO = Path(__file__).resolve().parents[2]
FLEET = "fleet.service"
MONITOR = "monitor.ops"  # the read-only watching account the shipped acl describes (commented out there)
PASSWORDS = {FLEET: "fleet-Pw-1", MONITOR: "monitor-Pw-1", "sim-a": "a-Pw-1", "sim-b": "b-Pw-1",
             **{f"sim-{i:04d}": f"pw-sim-{i:04d}" for i in range(3)}}  # the simulator's appliances
SETTLE_S = 1.5  # how long a message that is allowed takes at most to arrive on loopback


class FleetBroker:
    def __init__(self, directory: Path) -> None:
        require_tool("mosquitto", MOSQUITTO)
        self.dir = directory
        certs = make_test_certificates(directory / "certs")
        for source, name in ((certs.ca, "ca.pem"), (certs.server_cert, "server.pem"), (certs.server_key, "server.key")):
            shutil.copy(source, directory / name)
        self.ca = directory / "ca.pem"
        # As docs/fleet.md says: the first account with -c (creates the file), the others without.
        for index, (user, password) in enumerate(PASSWORDS.items()):
            flags = ["-c", "-b"] if index == 0 else ["-b"]
            subprocess.run([MOSQUITTO_PASSWD, *flags, str(directory / "passwd"), user, password], check=True, capture_output=True)
        acl = (REPO / "configs" / "fleet" / "acl").read_text()
        # The broker binds client ids to logins, so each account has one connection: the tests watch
        # with the monitoring account, as docs/fleet.md says to.
        (directory / "acl").write_text(acl.replace(f"# user {MONITOR}\n# topic read edge_app/#",
                                                   f"user {MONITOR}\ntopic read edge_app/#"))
        assert f"user {MONITOR}" in (directory / "acl").read_text()
        self.port = free_port()
        conf = (REPO / "configs" / "fleet" / "mosquitto.conf").read_text()
        conf = conf.replace("/etc/mosquitto/fleet/", f"{directory}/").replace("listener 8883", f"listener {self.port} 127.0.0.1")
        conf = conf.replace("persistence_location /var/lib/mosquitto/", f"persistence_location {directory}/")
        # Running as root, mosquitto would switch to the 'mosquitto' user and lose access to the test's files.
        conf += f"\nuser {getpass.getuser()}\nlog_dest file {directory / 'mosquitto.log'}\nlog_type all\n"
        (directory / "mosquitto.conf").write_text(conf)
        self.process = subprocess.Popen([MOSQUITTO, "-c", str(directory / "mosquitto.conf")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not port_accepts("127.0.0.1", self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mosquitto did not start: {(directory / 'mosquitto.log').read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


class Client:
    """A TLS client with an account; keeps what it receives."""

    def __init__(self, broker: FleetBroker, user: Optional[str], password: Optional[str] = None,
                 client_id: Optional[str] = None) -> None:
        self.received: List[Tuple[str, bytes]] = []
        self.connect_result: Optional[str] = None
        self.disconnects = 0
        self._connected = threading.Event()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id or f"acl-{uuid.uuid4().hex[:8]}")
        self.client.on_disconnect = self._on_disconnect
        self.client.tls_set(ca_certs=str(broker.ca))
        if user is not None:
            self.client.username_pw_set(user, PASSWORDS.get(user) if password is None else password)
        self.client.on_connect = self._on_connect
        self.client.on_message = lambda c, u, m: self.received.append((m.topic, bytes(m.payload)))
        self.client.on_subscribe = lambda *args: self._subscribed.set()
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        self._connected.wait(5)

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.disconnects += 1

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        self.connect_result = str(reason_code)
        self._connected.set()

    def subscribe(self, topic: str) -> None:
        self._subscribed.clear()
        self.client.subscribe(topic, qos=1)
        assert self._subscribed.wait(5)

    def publish(self, topic: str, payload: bytes, retain: bool = False) -> None:
        self.client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    running = FleetBroker(tmp_path_factory.mktemp("fleet-broker"))
    yield running
    running.stop()


@pytest.fixture
def clients(broker):
    made: List[Client] = []

    def make(user: Optional[str], password: Optional[str] = None, client_id: Optional[str] = None) -> Client:
        made.append(Client(broker, user, password, client_id))
        return made[-1]

    yield make
    for client in made:
        client.close()


@pytest.mark.parametrize("user, password, accepted", [
    ("sim-a", None, True), (FLEET, None, True), ("sim-a", "wrong", False), (None, None, False),
])
def test_only_known_accounts_connect(clients, user, password, accepted):
    client = clients(user, password)
    assert (client.connect_result == "Success") == accepted, client.connect_result


@pytest.mark.parametrize("user, topic, allowed", [
    ("sim-a", "edge_app/sim-a/status", True),
    ("sim-a", "edge_app/sim-a/cameras/cam1/state", True),
    ("sim-a", "edge_app/sim-a/events", True),
    ("sim-a", "edge_app/sim-a/config/reported", True),
    ("sim-a", "edge_app/sim-b/status", False),
    ("sim-a", "edge_app/sim-b/config/reported", False),
    ("sim-a", "edge_app/sim-b/config/desired", False),
    ("sim-a", "edge_app/sim-a/config/desired", False),  # an appliance never writes its own desired configuration
    (FLEET, "edge_app/sim-b/config/desired", True),
    (FLEET, "edge_app/sim-b/cameras/cam1/detect/set", True),
    (FLEET, "edge_app/sim-b/status", False),  # the fleet service cannot speak for an appliance
])
def test_who_may_publish_where(clients, user, topic, allowed):
    observer = clients(MONITOR)
    observer.subscribe("edge_app/#")
    payload = uuid.uuid4().hex.encode()
    clients(user).publish(topic, payload)
    time.sleep(SETTLE_S)
    assert ((topic, payload) in observer.received) == allowed, observer.received


@pytest.mark.parametrize("user, topic, writer, allowed", [
    ("sim-a", "edge_app/sim-a/config/desired", FLEET, True),
    ("sim-a", "edge_app/sim-a/cameras/cam1/detect/set", FLEET, True),
    ("sim-a", "edge_app/sim-b/config/desired", FLEET, False),
    ("sim-a", "edge_app/sim-b/cameras/cam1/detect/set", FLEET, False),
    ("sim-a", "edge_app/sim-b/status", "sim-b", False),
    ("sim-a", "edge_app/#", "sim-b", False),
    (FLEET, "edge_app/sim-b/status", "sim-b", True),
    (FLEET, "edge_app/+/config/reported", "sim-b", True),
])
def test_who_may_read_what(clients, user, topic, writer, allowed):
    payload = uuid.uuid4().hex.encode()
    written = topic.replace("#", "sim-b/status").replace("+", "sim-b") if writer == "sim-b" else topic
    clients(writer).publish(written, payload, retain=True)
    reader = clients(user)
    reader.subscribe(topic)
    time.sleep(SETTLE_S)
    assert ((written, payload) in reader.received) == allowed, reader.received


def _contract_topic(key: str, device_id: str) -> str:
    """The topic ``key`` of the MQTT contract (edge_app.mqtt.topic_docs) for ``device_id``, arguments filled in."""
    member = getattr(Topics("edge_app", device_id), key)
    if not callable(member):
        return member
    arguments = {"camera_id": "cam1", "label": "person", "zone": "driveway", "line": "gate"}
    return member(*(arguments[name] for name in inspect.signature(member).parameters))


@pytest.mark.parametrize("key", sorted(TOPIC_DOCS))
def test_every_topic_of_the_contract_passes_the_shipped_acl(clients, key):
    """Each topic the contract documents goes the way it says: the appliance's own topics from the
    appliance to the fleet, the ones it subscribes to from the fleet account to that appliance; never
    to another appliance."""
    subscribed = TOPIC_DOCS[key].retained == "subscribed"
    writer, reader, other = (FLEET, "sim-a", "sim-b") if subscribed else ("sim-a", FLEET, "sim-b")
    topic = _contract_topic(key, "sim-a")
    readers = {name: clients(name) for name in (reader, other)}
    for client in readers.values():
        client.subscribe(_contract_topic(key, "+") if subscribed else "edge_app/#")
    payload = uuid.uuid4().hex.encode()
    clients(writer).publish(topic, payload)
    time.sleep(SETTLE_S)
    assert (topic, payload) in readers[reader].received, f"{topic}: refused by configs/fleet/acl"
    assert (topic, payload) not in readers[other].received, f"{topic}: reached another appliance"


def test_the_appliances_own_client_works_under_the_acl(broker, clients):
    """edge-app's MqttPublisher with TLS and its device account: birth, states, desired in, reported out."""
    fleet = clients(FLEET)
    fleet.subscribe("edge_app/#")
    config = MQTTConfig(host="127.0.0.1", port=broker.port, username="sim-a", password=PASSWORDS["sim-a"],
                        tls={"enabled": True, "ca_certs": str(broker.ca)})
    publisher = MqttPublisher(config, "sim-a", "1.0", reconnect_min_delay_s=1, reconnect_max_delay_s=2)
    desired: List[bytes] = []
    publisher.on_config_desired(desired.append)
    publisher.start()
    try:
        deadline = time.monotonic() + 10
        while not publisher.connected and time.monotonic() < deadline:
            time.sleep(0.05)
        publisher.publish_camera_state("cam1", "streaming")
        time.sleep(0.5)  # the subscription is made on connect
        fleet.publish("edge_app/sim-a/config/desired", encode(config_desired_payload(1, {"model": {"conf_threshold": 0.4}})), retain=True)
        fleet.publish("edge_app/sim-b/config/desired", encode(config_desired_payload(1, {"model": {"conf_threshold": 0.9}})), retain=True)
        deadline = time.monotonic() + 5
        while not any(b"0.4" in payload for payload in desired) and time.monotonic() < deadline:
            time.sleep(0.05)
        publisher.publish_config_reported({"version": 1, "status": "applied", "errors": [], "ts": 1.0})
        publisher.publish_health({"ts": 1.0, "problems": []})
        time.sleep(SETTLE_S)
    finally:
        publisher.stop(timeout_s=2)
    # Its own desired configuration (after what earlier cases left retained there), never sim-b's.
    assert b'"conf_threshold":0.4' in desired[-1] and not any(b"0.9" in payload for payload in desired), desired
    topics = {topic for topic, _ in fleet.received}
    assert {"edge_app/sim-a/status", "edge_app/sim-a/cameras/cam1/state", "edge_app/sim-a/config/reported",
            "edge_app/sim-a/health"} <= topics, topics


def test_nothing_the_appliance_contract_sends_is_refused(broker, clients):
    """Simulated appliances (every topic of the contract) over TLS with their own accounts, and a
    rollout from the fleet account: the broker delivers every message they sent, and every report."""
    fleet = clients(MONITOR)
    fleet.subscribe("edge_app/#")
    done = subprocess.run(
        [sys.executable, "-m", "bench.fleet", "sim", "--broker", f"127.0.0.1:{broker.port}", "--devices", "3",
         "--duration-s", "8", "--stats-interval-s", "1", "--event-period-s", "4", "--rollout-at-s", "3",
         "--username", "{device_id}", "--password", "pw-{device_id}", "--tls-ca", str(broker.ca),
         "--fleet-username", FLEET, "--fleet-password", PASSWORDS[FLEET]],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["errors"] == 0 and summary["connected"] == 3, summary
    assert summary["rollout"]["applied"] == 3 and summary["rollout"]["missing"] == 0, summary

    def sent_by_appliances() -> List[str]:
        return [t for t, _ in list(fleet.received) if t.startswith("edge_app/sim-0") and not t.endswith("/config/desired")]
    # On a loaded machine the last messages may still be on their way; none may be missing in the end.
    deadline = time.monotonic() + 10 * SETTLE_S
    while len(sent_by_appliances()) < summary["messages_sent"] and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(SETTLE_S)  # and nothing more than was sent arrives
    received = sent_by_appliances()
    assert len(received) == summary["messages_sent"], (len(received), summary, received[-12:])


@pytest.mark.parametrize("victim, thief", [(FLEET, "sim-b"), ("sim-a", "sim-b"), ("sim-a", FLEET)])
def test_no_account_can_take_another_ones_session_over(clients, victim, thief):
    """The attack: appliance account evil-03 connected as edge-app-fleet and wiped the fleet's
    persistent session. With use_username_as_clientid the broker replaces the client id by the
    login, so the thief gets a session of its own and the victim stays connected."""
    observer = clients(MONITOR)
    observer.subscribe("edge_app/#")
    target = clients(victim, client_id="edge-app-fleet" if victim == FLEET else f"edge-app-{victim}")
    assert target.connect_result == "Success"
    thief_client = clients(thief, client_id="edge-app-fleet" if victim == FLEET else f"edge-app-{victim}")
    assert thief_client.connect_result == "Success"
    time.sleep(SETTLE_S)
    assert target.disconnects == 0 and thief_client.disconnects == 0
    if victim != FLEET:  # still the victim's connection: what it publishes arrives
        payload = uuid.uuid4().hex.encode()
        target.publish(f"edge_app/{victim}/status", payload)
        time.sleep(SETTLE_S)
        assert (f"edge_app/{victim}/status", payload) in observer.received


def test_a_second_connection_of_one_account_replaces_the_first(clients):
    """The price of the binding, which docs/fleet.md states: one connection per account."""
    first = clients("sim-a")
    second = clients("sim-a")
    assert (first.connect_result, second.connect_result) == ("Success", "Success")
    time.sleep(SETTLE_S)
    assert first.disconnects >= 1


def test_the_acl_in_docs_fleet_md_is_the_shipped_one():
    """docs/fleet.md shows the ACL's rules; they are those of configs/fleet/acl, no more, no fewer."""
    def rules(text: str) -> List[str]:
        return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    page = (REPO / "docs" / "fleet.md").read_text()
    shown = page.split("### The ACL", 1)[1].split("```", 2)[1]
    assert rules(shown) == rules((REPO / "configs" / "fleet" / "acl").read_text())
