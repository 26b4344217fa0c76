"""Every change of the running configuration takes one path, under one lock, all or nothing.

A real appliance in this process (a test:// camera, the real YOLOv8n on ONNX Runtime) talks to a
real Mosquitto; ``detect/set`` commands arrive over it like a Home Assistant switch sends them.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import paho.mqtt.publish as mqtt_publish
import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config_change.checks import check_runtime
from edge_app.config.file import ConfigFile, load_config, parse_config, save_config
from edge_app.config_change.changes import ChangeRules
from testkit.waiting import wait_for

DEVICE = "one-path"
CAM = "cam"
SET_TOPIC = f"edge_app/{DEVICE}/cameras/{CAM}/detect/set"


def _config(model_path: Path, broker) -> dict:
    return {
        "device_id": DEVICE,
        "cameras": [{"id": CAM, "source": "test://box?fps=5&width=160&height=120"}],
        "model": {"path": str(model_path), "max_batch": 1},
        "mqtt": {"host": broker.host, "port": broker.port},
        "api": {"enabled": False},
    }


class Running:
    def __init__(self, tmp_path: Path, model_path: Path, broker, runtime_check=check_runtime):
        self.config_path = tmp_path / "config.yaml"
        config = parse_config(_config(model_path, broker))
        save_config(config, self.config_path)
        # The one change path, with the rules ``edge-app run`` gives it.
        self.appliance = Appliance(config, change_rules=ChangeRules(config_file=ConfigFile(self.config_path),
                                                                    runtime_check=runtime_check))
        self.changes = self.appliance.changes
        self.appliance.start()
        wait_for(lambda: self.appliance._publisher._subscribed, 15, "the detect/set subscription")

    def detect(self) -> bool:
        return self.appliance.current_config().camera(CAM).detect

    def detect_in_file(self) -> bool:
        return load_config(self.config_path).camera(CAM).detect


@pytest.fixture
def running(tmp_path, model_path, mosquitto_broker):
    made = []

    def start(runtime_check=check_runtime) -> Running:
        made.append(Running(tmp_path, model_path, mosquitto_broker, runtime_check))
        return made[-1]

    yield start
    for item in made:
        item.appliance.stop()


def test_a_detect_switch_during_a_slow_patch_is_not_lost(running, mosquitto_broker):
    """The PATCH is validated slowly (its check blocks until the switch has landed, or 3 s): the
    switch that arrives meanwhile and the PATCH both hold afterwards, in memory and in the file."""
    switch_sent = threading.Event()

    def slow_check(config, previous=None):
        if config.model.conf_threshold == 0.61 and not switch_sent.is_set():
            switch_sent.set()
            mqtt_publish.single(SET_TOPIC, "OFF", qos=1, hostname=mosquitto_broker.host, port=mosquitto_broker.port)
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline and app.detect():
                time.sleep(0.02)
        return check_runtime(config, previous)

    app = running(slow_check)
    assert app.detect() is True

    app.changes.patch({"model": {"conf_threshold": 0.61}})

    assert switch_sent.is_set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and app.detect():
        time.sleep(0.05)
    config = app.appliance.current_config()
    assert config.model.conf_threshold == 0.61, "the PATCH was lost"
    assert config.camera(CAM).detect is False, "the detect switch was undone by the PATCH"
    wait_for(lambda: app.detect_in_file() is False, 5, "the switch in the file")
    assert load_config(app.config_path).model.conf_threshold == 0.61


def test_a_flood_of_detect_switches_uses_one_worker_and_writes_rarely(running, mosquitto_broker):
    """5,000 alternating ON/OFF commands: a bounded number of threads, about one file write a
    second at most, and the last command is what holds."""
    app = running()
    threads_before = threading.active_count()
    peak = {"threads": threads_before}
    inodes = {os.stat(app.config_path).st_ino}
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            peak["threads"] = max(peak["threads"], threading.active_count())
            try:
                inodes.add(os.stat(app.config_path).st_ino)  # every save renames a new file over it
            except FileNotFoundError:
                pass
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, name="test:sample", daemon=True)
    sampler.start()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="flood")
    client.connect(mosquitto_broker.host, mosquitto_broker.port)
    client.loop_start()
    started = time.monotonic()
    try:
        infos = [client.publish(SET_TOPIC, "OFF" if i % 2 == 0 else "ON", qos=0) for i in range(5000)]
        # The last word: sent once the flood is out, so a broker queue limit cannot drop it.
        infos[-1].wait_for_publish(10)
        client.publish(SET_TOPIC, "OFF", qos=1).wait_for_publish(10)
    finally:
        client.loop_stop()
        client.disconnect()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (app.detect() or app.detect_in_file()):
        time.sleep(0.05)
    time.sleep(1.5)  # anything still coalescing lands now
    elapsed_s = time.monotonic() - started
    sampling.set()
    sampler.join(2)

    assert peak["threads"] - threads_before <= 5, f"{peak['threads'] - threads_before} threads more during the flood"
    writes = len(inodes) - 1
    assert writes <= elapsed_s + 2, f"{writes} file writes in {elapsed_s:.1f} s"
    assert app.detect() is False and app.detect_in_file() is False


def test_a_failure_after_saving_restores_the_file_and_the_running_configuration(running):
    app = running()
    before_bytes = app.config_path.read_bytes()
    before = app.appliance.current_config()
    analysis = app.appliance._analysis
    real_configure = analysis.configure
    calls = []

    def failing_once(config):
        calls.append(config)
        if len(calls) == 1:
            raise RuntimeError("injected failure after the file was saved")
        return real_configure(config)

    analysis.configure = failing_once
    with pytest.raises(Exception, match="injected"):
        app.changes.patch({"model": {"conf_threshold": 0.55},
                           "cameras": [{"id": CAM, "source": "test://box?fps=5&width=160&height=120", "detect": False}]})

    assert app.config_path.read_bytes() == before_bytes, "the file must be as it was"
    assert app.appliance.current_config() == before, "the running configuration must be as it was"
    assert app.appliance._detector.conf_threshold == before.model.conf_threshold
    # The change path still works afterwards.
    app.changes.patch({"model": {"conf_threshold": 0.45}})
    assert load_config(app.config_path).model.conf_threshold == 0.45
    assert app.appliance._detector.conf_threshold == 0.45
