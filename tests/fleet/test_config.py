"""FLEET.yaml: the appliance's mqtt and api sections, one topic prefix, a database URL."""
from __future__ import annotations

import pytest

from edge_app.config.file import ConfigError
from edge_app.fleet_service.config import load_fleet_config, parse_fleet_config


def test_the_example_configuration_is_valid(repo_root):
    config = load_fleet_config(repo_root / "configs" / "fleet" / "fleet.yaml")
    assert config.database.url == "sqlite:///fleet.db"
    assert config.mqtt_client_id == "edge-app-fleet"


def test_defaults():
    config = parse_fleet_config({})
    assert (config.topic_prefix, config.database.url, config.api.port) == ("edge_app", "sqlite:///fleet.db", 8080)
    assert config.mqtt_client_id == "edge-app-fleet"
    assert (config.devices.allow, config.devices.max, config.rollouts.timeout_s) == (["*"], 1000, 86400)
    assert config.ingest.message_bytes["stats"] == 65536
    assert (config.artifacts.dir, config.artifacts.max_mb, config.artifacts.max_upload_mb) == ("artifacts", 10240, 2048)
    assert config.device_tokens == {}


def test_device_tokens_are_secret():
    config = parse_fleet_config({"device_tokens": {"edge-01": "token-of-edge-01-0123456789"}})
    assert config.device_tokens["edge-01"].get_secret_value() == "token-of-edge-01-0123456789"
    assert "token-of-edge-01" not in repr(config) and "token-of-edge-01" not in config.model_dump_json()


def test_message_limits_name_only_the_kinds_they_change():
    limits = parse_fleet_config({"ingest": {"message_bytes": {"stats": 2048}}}).ingest.message_bytes
    assert limits["stats"] == 2048 and limits["event"] == 65536


@pytest.mark.parametrize("data, prefix", [
    ({"topic_prefix": "site/a"}, "site/a"),
    ({"mqtt": {"topic_prefix": "site_b"}}, "site_b"),
    ({"mqtt": {"topic_prefix": "x"}, "topic_prefix": "x"}, "x"),
])
def test_one_topic_prefix_from_either_place(data, prefix):
    assert parse_fleet_config(data).topic_prefix == prefix


@pytest.mark.parametrize("data, loc, words", [
    ({"mqtt": {"topic_prefix": "a"}, "topic_prefix": "b"}, "", "differ"),
    ({"mqtt": {"enabled": False}}, "", "needs its broker"),
    ({"topic_prefix": "a/+"}, "topic_prefix", "wildcards"),
    ({"topic_prefix": "a//b"}, "topic_prefix", "empty levels"),
    ({"database": {"url": "sqlite:///"}}, "database.url", "file name"),
    ({"database": {"url": "mongodb://x"}}, "database.url", "sqlite:///"),
    ({"database": {"path": "x"}}, "database.path", "unknown key"),
    ({"database": {"events_retain_dys": 3}}, "database.events_retain_dys", "did you mean events_retain_days?"),
    ({"api": {"host": "0.0.0.0", "token": "short"}}, "api.token", "16 characters"),
    ({"devices": {"allow": ["shop/#"]}}, "devices.allow", "device id pattern"),
    ({"devices": {"max": 0}}, "devices.max", "greater than or equal to 1"),
    ({"ingest": {"message_bytes": {"detections": 100}}}, "ingest.message_bytes", "unknown kind"),
    ({"ingest": {"message_bytes": {"stats": 10 ** 9}}}, "ingest.message_bytes", "1048576"),
    ({"ingest": {"stuck_after_s": 0}}, "ingest.stuck_after_s", "greater than 0"),
    ({"rollouts": {"timeout_s": float("inf")}}, "rollouts.timeout_s", "finite"),
    ({"device_tokens": {"edge-01": "short"}}, "device_tokens", "16 to 256 characters"),
    ({"device_tokens": {"../edge": "0123456789abcdef0"}}, "device_tokens", "not a device id"),
    ({"artifacts": {"max_mb": 0}}, "artifacts.max_mb", "greater than or equal to 1"),
    ({"artifacts": {"max_upload_mb": 1 << 20}}, "artifacts.max_upload_mb", "less than or equal to 65536"),
    ({"artifacts": {"upload_deadline_s": 1}}, "artifacts.upload_deadline_s", "greater than or equal to 10"),
    ({"artifacts": {"dir": ""}}, "artifacts.dir", "at least 1 character"),
    ({"artifacts": {"path": "x"}}, "artifacts.path", "unknown key"),
])
def test_problems_name_their_field(data, loc, words):
    with pytest.raises(ConfigError) as caught:
        parse_fleet_config(data)
    problem = caught.value.problems[0]
    assert problem.loc == loc and words in problem.msg
