"""The appliance's fleet artifact settings: fleet.url/token/ca_certs and model.artifact (docs/fleet.md)."""
import pytest
from edge_app.config.file import ConfigError as ValidationError

from edge_app.config.file import merge_patch, parse_config, redacted_dict
from edge_app.config.remote_policy import broker_problems
from edge_app.config.secrets import misdirected_secrets, restore_secrets

TOKEN = "device-token-0123456789abcdef"
BASE = {
    "device_id": "dev1",
    "model": {"path": "models/m.onnx", "artifact": {"name": "gate", "version": "3"}},
    "fleet": {"remote_config": True, "desired_key": "k" * 40, "url": "https://fleet.example:8443",
              "token": TOKEN},
}


def config(patch=None):
    return parse_config(merge_patch(BASE, patch or {}))


@pytest.mark.parametrize("url", ["https://fleet.example", "https://10.0.0.2:8443/", "http://127.0.0.1:8090",
                                 "http://localhost:8090", "http://[::1]:8090"])
def test_fleet_urls_accepted(url):
    assert config({"fleet": {"url": url}}).fleet.url == url.rstrip("/")


@pytest.mark.parametrize("url, why", [
    ("http://10.0.0.2:8090", "https"), ("http://fleet.example", "https"), ("ftp://fleet.example", "https://host"),
    ("https://user:pw@fleet.example", "no user"), ("https://fleet.example/api", "no path"),
])
def test_fleet_urls_refused(url, why):
    with pytest.raises(ValidationError, match=why):
        config({"fleet": {"url": url}})


@pytest.mark.parametrize("token", ["short", "a token with spaces inside", "x" * 15])
def test_fleet_token_refused(token):
    with pytest.raises(ValidationError, match="fleet.token"):
        config({"fleet": {"token": token}})


@pytest.mark.parametrize("artifact", [{"name": "..", "version": "1"}, {"name": "gate", "version": "."},
                                      {"name": "a/b", "version": "1"}, {"name": "gate", "version": "1/../2"},
                                      {"name": "gate", "version": None}, {"name": "gate", "version": "v" * 33}])
def test_artifact_names_that_could_leave_the_cache_are_refused(artifact):
    with pytest.raises(ValidationError):
        config({"model": {"artifact": artifact}})


def test_fleet_token_is_redacted_like_the_api_token():
    shown = redacted_dict(config())
    assert shown["fleet"]["token"] == "***" and TOKEN not in repr(shown)


def test_masked_token_is_kept_for_the_same_fleet_service_only():
    current = config()
    body = merge_patch(BASE, {"fleet": {"token": "***"}})
    data, restored, problems = restore_secrets(body, current)
    assert not problems and data["fleet"]["token"] == TOKEN
    assert misdirected_secrets(parse_config(data), current, restored) == []
    moved = merge_patch(body, {"fleet": {"url": "https://attacker.example"}})
    data, restored, _ = restore_secrets(moved, current)
    problems = misdirected_secrets(parse_config(data), current, restored)
    assert [p.loc for p in problems] == ["fleet.token"]


def test_remote_configuration_may_change_the_artifact_version_only():
    assert broker_problems(config(), config({"model": {"artifact": {"version": "4"}}})) == []
    refused = {
        "model.artifact.name": {"model": {"artifact": {"name": "other"}}},
        "fleet.url": {"fleet": {"url": "https://attacker.example"}},
        "fleet.token": {"fleet": {"token": "attacker-token-0123456789"}},
        "fleet.ca_certs": {"fleet": {"ca_certs": "/tmp/ca.pem"}},
    }
    for loc, patch in refused.items():
        assert [p.loc for p in broker_problems(config(), config(patch))] == [loc]


def test_remote_configuration_may_not_add_an_artifact():
    plain = {"model": {"path": "models/m.onnx"}, "fleet": {"remote_config": True, "desired_key": "k" * 40}}
    added = merge_patch(plain, {"model": {"artifact": {"name": "gate", "version": "3"}}})
    assert broker_problems(parse_config(plain), parse_config(added))


def test_the_fallback_retry_waits_are_bounded_and_not_for_the_broker():
    fleet = config({"fleet": {"fallback_retry_s": 5, "fallback_retry_max_s": 60}}).fleet
    assert (fleet.fallback_retry_s, fleet.fallback_retry_max_s) == (5, 60)
    assert (config().fleet.fallback_retry_s, config().fleet.fallback_retry_max_s) == (30, 600)
    for patch, words in [({"fallback_retry_s": 0}, "greater than or equal to 1"),
                         ({"fallback_retry_s": 3601}, "less than or equal to 3600"),
                         ({"fallback_retry_max_s": 86401}, "less than or equal to 86400"),
                         ({"fallback_retry_s": 120, "fallback_retry_max_s": 60}, "at least fleet.fallback_retry_s"),
                         ({"fallback_retry_s": float("nan")}, "finite")]:
        with pytest.raises(ValidationError, match=words):
            config({"fleet": patch})
    assert [p.loc for p in broker_problems(config(), config({"fleet": {"fallback_retry_s": 1}}))] == \
        ["fleet.fallback_retry_s"]
