"""R/profile/set against a real Mosquitto and a real appliance (a test:// camera, the real
YOLOv8n on ONNX Runtime): a profile name switches (in memory, in the file, on the retained
R/profile and in the running cameras), and a hostile command is refused with a reply on
R/profile/error saying why, changing nothing."""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Dict, List

import paho.mqtt.client as mqtt
import paho.mqtt.publish as mqtt_publish
import pytest
import requests

from edge_app.api import create_app
from edge_app.appliance.appliance import Appliance
from edge_app.config.file import ConfigFile, load_config, parse_config, save_config
from edge_app.config_change.changes import ChangeRules
from edge_app.mqtt.ha_discovery import build_discovery
from edge_app.mqtt.topics import Topics
from edge_app.http_server.server import ApiServer
from testkit.waiting import wait_for

DEVICE = "profiled"
TOPICS = Topics("edge_app", DEVICE)


def _config(model_path, broker) -> dict:
    return {
        "device_id": DEVICE,
        "cameras": [{"id": "cam", "source": "test://box?fps=5&width=160&height=120"}],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"host": broker.host, "port": broker.port},
        "api": {"enabled": False},
        "profiles": {"timezone": "UTC", "definitions": [{"name": "home"}, {"name": "away", "detect": {"cam": False}}]},
    }


class Listener:
    """A client of the broker that keeps every message on R/profile and R/profile/error."""

    def __init__(self, broker) -> None:
        self.messages: Dict[str, List[bytes]] = {TOPICS.profile: [], TOPICS.profile_error: []}
        self._lock = threading.Lock()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="profile-listener")
        self.client.on_message = self._on_message
        self.client.connect(broker.host, broker.port)
        self.client.subscribe([(TOPICS.profile, 1), (TOPICS.profile_error, 1)])
        self.client.loop_start()

    def _on_message(self, client, userdata, msg) -> None:
        with self._lock:
            self.messages[msg.topic].append(bytes(msg.payload))

    def latest(self, topic: str) -> dict:
        with self._lock:
            return json.loads(self.messages[topic][-1]) if self.messages[topic] else {}

    def count(self, topic: str) -> int:
        with self._lock:
            return len(self.messages[topic])

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture
def make_box(tmp_path, model_path, mosquitto_broker):
    """``make_box(before_start)``: (appliance, config path, listener), started after ``before_start()``."""
    made = []

    def start(before_start=lambda: None):
        path = tmp_path / "config.yaml"
        save_config(parse_config(_config(model_path, mosquitto_broker)), path)
        appliance = Appliance(load_config(path), change_rules=ChangeRules(config_file=ConfigFile(path)))
        listener = Listener(mosquitto_broker)
        made.append((appliance, listener))
        before_start()
        appliance.start()
        wait_for(lambda: appliance._publisher._subscribed, 15, "the command subscriptions")
        wait_for(lambda: listener.count(TOPICS.profile) > 0, 10, "the retained R/profile")
        return appliance, path, listener

    yield start
    for appliance, listener in made:
        listener.close()
        appliance.stop()


@pytest.fixture
def box(make_box):
    return make_box()


def _send(broker, payload, retain: bool = False) -> None:
    mqtt_publish.single(TOPICS.profile_set, payload, qos=1, retain=retain, hostname=broker.host, port=broker.port)


def test_a_profile_name_switches_everywhere(box, mosquitto_broker):
    appliance, path, listener = box
    assert listener.latest(TOPICS.profile)["active"] is None
    _send(mosquitto_broker, "away")
    wait_for(lambda: listener.latest(TOPICS.profile).get("active") == "away", 10, "R/profile to say away")
    assert load_config(path).profiles.active == "away"
    assert appliance.current_config().camera("cam").detect is True  # the file's base is untouched ...
    assert appliance.reads.status().profile.active == "away"
    assert appliance._config.camera("cam").detect is False  # ... what runs has the profile's override
    assert listener.latest(TOPICS.profile)["source"] == "switched"  # no schedule: the last switch holds
    assert appliance.reads.stats_payload()["profile"] == "away"
    server = ApiServer(create_app(appliance.reads, appliance.changes, appliance.event_deletion), "127.0.0.1", 0)
    server.start()
    try:  # GET /api/v1/status over real HTTP, as the dashboard and a monitoring system read it
        status = requests.get(server.url + "/api/v1/status", timeout=10).json()
    finally:
        server.stop(timeout_s=5)
    assert (status["profile"]["active"], status["profile"]["profiles"]) == ("away", ["home", "away"])


def _refused(appliance, path, listener, words: str) -> None:
    wait_for(lambda: listener.count(TOPICS.profile_error) > 0, 10, "the R/profile/error reply")
    reply = listener.latest(TOPICS.profile_error)
    assert words in reply["error"] and isinstance(reply["ts"], float)
    assert load_config(path).profiles.active is None and appliance.current_config().profiles.active is None


@pytest.mark.parametrize("payload, words", [
    (b"party", "there is no profile 'party' (profiles: home, away)"),
    (b"\xff\xfe", "not UTF-8"),
    (b"x" * 10_000, "has at most 64"),
    (b'{"profile": "away"}', "not a profile name"),
    (b"", "not a profile name"),
    (b"home\x00", "not a profile name"),
], ids=["unknown", "not UTF-8", "huge", "JSON", "empty", "NUL"])
def test_a_hostile_command_is_refused_with_a_reply(box, mosquitto_broker, payload, words):
    _send(mosquitto_broker, payload)
    _refused(*box, words)


def test_a_retained_command_is_not_acted_on_at_subscription(make_box, mosquitto_broker):
    """A command left retained on the broker would switch again at every reconnect, over whatever
    the owner chose since: the subscription hands it over flagged retained, and it is refused."""
    try:
        _refused(*make_box(lambda: _send(mosquitto_broker, b"away", retain=True)), "a retained command is not acted on")
    finally:
        _send(mosquitto_broker, b"", retain=True)  # clears the retained message


def test_home_assistant_gets_a_select_of_the_profiles(box):
    appliance, _, _ = box
    cmps = build_discovery(appliance.current_config(), TOPICS, "1.0", [])["cmps"]
    select = next(body for body in cmps.values() if body["p"] == "select")
    assert select["options"] == ["home", "away"]
    assert (select["command_topic"], select["state_topic"]) == (TOPICS.profile_set, TOPICS.profile)


def test_a_flood_of_switches_writes_rarely_and_the_last_one_holds(box, mosquitto_broker):
    """2,000 alternating switches then a last one: about one file write a second at most, and the last holds."""
    appliance, path, listener = box
    inodes = {os.stat(path).st_ino}
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            try:
                inodes.add(os.stat(path).st_ino)  # every save renames a new file over it
            except FileNotFoundError:
                pass
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, name="test:sample", daemon=True)
    sampler.start()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="profile-flood")
    client.connect(mosquitto_broker.host, mosquitto_broker.port)
    client.loop_start()
    started = time.monotonic()
    try:
        infos = [client.publish(TOPICS.profile_set, "home" if i % 2 == 0 else "away", qos=0) for i in range(2000)]
        infos[-1].wait_for_publish(10)
        client.publish(TOPICS.profile_set, "home", qos=1).wait_for_publish(10)
    finally:
        client.loop_stop()
        client.disconnect()
    wait_for(lambda: load_config(path).profiles.active == "home", 20, "the last switch in the file")
    time.sleep(1.5)  # anything still coalescing lands now
    elapsed_s = time.monotonic() - started
    sampling.set()
    sampler.join(2)
    assert load_config(path).profiles.active == "home" == appliance.current_config().profiles.active
    assert len(inodes) - 1 <= elapsed_s + 2, f"{len(inodes) - 1} file writes in {elapsed_s:.1f} s"


def test_no_select_without_profiles(model_path, mosquitto_broker):
    config = parse_config({**_config(model_path, mosquitto_broker), "profiles": {}})
    assert not [body for body in build_discovery(config, TOPICS, "1.0", [])["cmps"].values() if body["p"] == "select"]
