"""``models_state`` rides along in ``R/config/reported``: with every report, and again whenever it changes."""
from __future__ import annotations

import time

from edge_app.config.file import parse_config, save_config
from edge_app.fleet_agent.agent import FleetAgent
from edge_app.fleet_agent.artifacts.state import ModelsState
from edge_app.fleet_protocol.desired_signature import signed_desired
from edge_app.fleet_agent.desired.versions import DesiredVersionStore, state_path_for
from edge_app.mqtt.payloads import encode
from tests.api.in_memory_service import InMemoryService, saving_change_path

KEY = "shared-desired-key-0123456789abcdef"


def test_models_state_is_published_with_reports_and_on_its_own_changes(tmp_path, model_path):
    config_path = tmp_path / "config.yaml"
    config = parse_config({"device_id": "dev", "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                           "fleet": {"remote_config": True, "desired_key": KEY}})
    save_config(config, config_path)
    service = InMemoryService(config, config_path)
    changes = saving_change_path(service)
    reports = []
    state = ModelsState()
    agent = FleetAgent(changes, DesiredVersionStore(state_path_for(config_path)), reports.append,
                       models_state=state.snapshot)
    state.on_change(agent.republish)

    # before any desired version: version 0, applied (the fleet's starting point), with the state
    state.set("gate", "3", "downloading", 0.0)
    assert reports[-1]["version"] == 0 and reports[-1]["status"] == "applied"
    assert reports[-1]["models_state"] == {"gate": {"version": "3", "state": "downloading", "progress": 0.0,
                                                    "reason": None}}
    patch = {"model": {"conf_threshold": 0.4}}
    message = encode(signed_desired(KEY, "dev", "e" * 32, int(time.time() * 1000), 1, patch))
    agent.handle(message)
    assert reports[-1]["version"] == 1 and reports[-1]["models_state"]["gate"]["state"] == "downloading"
    state.set("gate", "3", "failed", reason="the fleet service at https://fleet.example cannot be reached")
    assert reports[-1]["version"] == 1 and reports[-1]["models_state"]["gate"]["state"] == "failed"
