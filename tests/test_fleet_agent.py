"""The fleet agent's rules, in-process: versions once and in order, the saved state, the broker's limits.

The change path is the real one (``ConfigChanges`` with the machine checks, the real model file),
in front of the in-memory service the API tests use; reports are collected as published.
"""
from __future__ import annotations

import json
import threading

import pytest

from edge_app.config.store import ConfigFile, load_config, parse_config, save_config
from edge_app.config_changes import ConfigChanges, ConfigRefused, Origin
from edge_app.fleet_agent import FleetAgent
from edge_app.fleet_state import DesiredVersionStore, state_path_for
from edge_app.mqtt.payloads import config_desired_payload, encode
from tests.api.in_memory_service import InMemoryService


@pytest.fixture
def setup(tmp_path, model_path):
    config_path = tmp_path / "config.yaml"
    config = parse_config({"device_id": "dev", "cameras": [{"id": "cam", "source": "test://bars"}],
                           "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                           "api": {"allow_unsafe_sources": True}})
    save_config(config, config_path)
    service = InMemoryService(config, config_path)
    changes = ConfigChanges(service, service.current_config, config_file=ConfigFile(config_path))
    reports = []

    def agent():
        return FleetAgent(changes, DesiredVersionStore(state_path_for(config_path)), reports.append)

    return config_path, service, changes, reports, agent


def desired(version, patch):
    return encode(config_desired_payload(version, patch))


def threshold(value):
    return {"model": {"conf_threshold": value}}


def test_versions_are_acted_on_once_and_in_order(setup):
    config_path, service, _, reports, make_agent = setup
    agent = make_agent()
    steps = [(2, threshold(0.3), "applied"), (1, threshold(0.4), None), (2, threshold(0.5), None),
             (3, threshold(7), "rejected"), (3, threshold(0.6), None), (4, threshold(0.7), "applied")]
    for version, patch, outcome in steps:
        report = agent.handle(desired(version, patch))
        assert (report.status if report else None) == outcome, (version, patch)
    assert [(r["version"], r["status"]) for r in reports] == [(2, "applied"), (3, "rejected"), (4, "applied")]
    assert reports[1]["errors"][0]["loc"] == "model.conf_threshold"
    assert service.current_config().model.conf_threshold == 0.7 == load_config(config_path).model.conf_threshold
    assert json.loads(state_path_for(config_path).read_text())["version"] == 4

    # After a restart: the saved report is published again, and version 4 is known to be done.
    restarted = make_agent()
    assert restarted.version == 4
    restarted.start()
    restarted.stop()
    assert reports[-1] == reports[2]
    assert restarted.handle(desired(4, threshold(0.2))) is None


@pytest.mark.parametrize("content", ["{", "[]", '{"version": -1}', '{"version": "3"}', '{"version": 3, "reported": {"x": 1}}'])
def test_an_unreadable_state_file_starts_from_nothing(setup, content):
    config_path, _, _, _, make_agent = setup
    state_path_for(config_path).write_text(content)
    agent = make_agent()
    assert agent.version == 0
    assert agent.handle(desired(1, threshold(0.3))).status == "applied"


def test_a_failed_state_save_still_applies_and_reports(setup, tmp_path):
    _, service, changes, reports, _ = setup
    agent = FleetAgent(changes, DesiredVersionStore(tmp_path / "missing-dir" / "state.json"), reports.append)
    assert agent.handle(desired(1, threshold(0.3))).status == "applied"
    assert (agent.version, reports[-1]["version"], service.current_config().model.conf_threshold) == (1, 1, 0.3)


@pytest.mark.parametrize("camera", [
    {"id": "evil", "source": "gst:filesrc location=/etc/passwd ! appsink"},
    {"id": "evil", "source": "/etc/passwd"},
    {"id": "evil", "source": "csi://0"},
])
def test_the_broker_never_brings_unsafe_sources_even_when_the_file_allows_them(setup, camera):
    """api.allow_unsafe_sources: true trusts the local API; R/config/desired stays limited."""
    config_path, service, changes, reports, make_agent = setup
    before = config_path.read_bytes()
    cameras = [{"id": "cam", "source": "test://bars"}, camera]
    report = make_agent().handle(desired(1, {"cameras": cameras}))
    assert report.status == "rejected" and [e.loc for e in report.errors] == ["cameras.1.source"]
    assert config_path.read_bytes() == before and len(service.current_config().cameras) == 1
    # The same change through the API passes the policy (it may still fail on this machine).
    try:
        changes.patch({"cameras": cameras}, Origin.API)
    except ConfigRefused as err:
        assert "allow_unsafe_sources" not in json.dumps([p.as_dict() for p in err.problems])


def test_queued_messages_are_applied_in_arrival_order_on_the_agents_thread(setup):
    _, service, _, reports, make_agent = setup
    agent = make_agent().start()
    seen_threads = []
    original = service.apply_config
    service.apply_config = lambda config: (seen_threads.append(threading.current_thread().name), original(config))[1]
    try:
        for version in range(1, 21):
            agent.on_desired(desired(version, threshold(round(0.01 * version, 2))))
        agent.on_desired(b"")  # an emptied retained message asks for nothing
        assert agent.wait_idle(30)
    finally:
        agent.stop()
    assert [r["version"] for r in reports] == list(range(1, 21))
    assert set(seen_threads) == {"fleet:config"}
    assert service.current_config().model.conf_threshold == 0.2
