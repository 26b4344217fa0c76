"""Device health through a real appliance: the REST route and status over HTTP, /metrics, R/health on a real broker."""
import json

import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.appliance.appliance import Appliance
from edge_app.health.sampler import health_dirs
from edge_app.config.file import ConfigFile, parse_config
from edge_app.config_change.changes import ChangeRules
from edge_app.health.sampler import HealthSampler
from tests.health.conftest import TREES
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def running(mosquitto_broker, model_path, tmp_path):
    raw = {
        "device_id": "box1",
        "cameras": [{"id": "front", "source": "test://box?fps=5&width=320&height=240"}],
        "model": {"path": str(model_path), "engine_dir": str(tmp_path / "engines"), "backend": "onnxruntime"},
        "mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port},
        "events": {"dir": str(tmp_path / "events")},
        "health": {"interval_s": 1, "publish_s": 1},
        "homeassistant": {"enabled": True},
    }
    config = parse_config(raw)
    # The synthetic Orin NX tree: 99.4 °C, throttling, memory 92 % used.
    sampler = HealthSampler(config.health, health_dirs(config), root=TREES / "orin-nx", base=tmp_path)
    appliance = Appliance(config, health=sampler, change_rules=ChangeRules(config_file=ConfigFile(tmp_path / "config.yaml")))
    server = ApiServer(create_app(appliance.reads, appliance.changes, appliance.event_deletion), "127.0.0.1", 0)
    server.start()
    appliance.start()
    try:
        yield appliance, server.url
    finally:
        appliance.stop()
        server.stop(timeout_s=5)


def test_rest_status_metrics_and_the_retained_topic_from_a_synthetic_tree(running, mosquitto_broker, mqtt_collector):
    appliance, url = running
    body = wait_for(lambda: (lambda b: b if b["problems"] else None)(requests.get(url + "/api/v1/health/device", timeout=5).json()),
                    10, "a sample with problems")
    assert [p["kind"] for p in body["problems"]] == ["hot", "throttling", "memory_full"]
    assert body["power"]["mode"] == "25W" and body["gpu"][0]["load_percent"] == 96.2
    assert body["summary"]["temperature_c"] == 99.4 and body["summary"]["throttling"] is True
    status = requests.get(url + "/api/v1/status", timeout=5).json()
    assert [p["kind"] for p in status["health"]["problems"]] == ["hot", "throttling", "memory_full"]
    metrics = requests.get(url + "/metrics", timeout=5).text
    assert 'edge_app_health_temperature_celsius{zone="tj-thermal"} 99.4' in metrics
    assert 'edge_app_health_problem{kind="hot"} 1.0' in metrics
    assert 'edge_app_health_rail_power_watts{rail="VDD_IN"}' in metrics
    assert "edge_app_health_throttling 1.0" in metrics

    late = mqtt_collector(mosquitto_broker, ["edge_app/box1/health", "homeassistant/device/box1/config"])
    retained = late.wait_for_message("edge_app/box1/health", timeout_s=10)
    assert retained.retain
    payload = json.loads(retained.payload)
    assert set(payload) >= {"ts", "problems", "cpu", "memory", "disk", "gpu", "thermal", "power"}
    assert b'": ' not in retained.payload and b'\n' not in retained.payload  # compact separators
    discovery = late.wait_for_message("homeassistant/device/box1/config", timeout_s=10).json()
    health_entities = [c for c in discovery["cmps"].values() if c.get("state_topic") == "edge_app/box1/health"]
    assert len(health_entities) == 5

    # A changed limit applies to the next sample: 99.4 °C is no longer hot at 120.
    answer = requests.patch(url + "/api/v1/config", json={"health": {"limits": {"temperature_c": 120}}}, timeout=10)
    assert answer.status_code == 200, answer.text
    wait_for(lambda: [p.kind for p in appliance.reads.device_health().problems] == ["throttling", "memory_full"],
             10, "hot gone after the limit changed")
