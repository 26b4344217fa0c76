"""Parsing ``R/config/desired`` (hostile input) and keeping secrets out of ``R/config/reported``."""
import json

import pytest

from edge_app.config.file import Problem
from edge_app.fleet_agent.agent import scrub
from edge_app.fleet_agent.desired.config import MAX_DESIRED_BYTES, DesiredConfigError, parse_desired
from edge_app.mqtt.payloads import config_desired_payload, config_reported_payload, encode
from edge_app.mqtt.topics import Topics


def test_topics_of_the_fleet():
    topics = Topics("site", "dev1")
    assert (topics.config_desired, topics.config_reported) == ("site/dev1/config/desired", "site/dev1/config/reported")


def test_a_desired_payload_round_trips():
    desired = parse_desired(encode(config_desired_payload(3, {"model": {"conf_threshold": 0.4}})))
    assert (desired.version, desired.patch) == (3, {"model": {"conf_threshold": 0.4}})


@pytest.mark.parametrize("payload, version, locs", [
    (b"{", None, [""]),
    (b"[]", None, [""]),
    (b"\xc3\x28", None, [""]),
    (b'{"version": Infinity, "patch": {}}', None, [""]),
    (b"[" * 100000 + b"]" * 100000, None, [""]),
    (b" " * (MAX_DESIRED_BYTES + 1), None, [""]),
    (b'{"version": true, "patch": {}}', None, ["version"]),
    (b'{"version": 0, "patch": {}}', None, ["version"]),
    (b'{"version": 1.5, "patch": {}}', None, ["version"]),
    (b'{"version": 9007199254740993, "patch": {}}', None, ["version"]),
    (b'{"version": 4, "patch": "x"}', 4, ["patch"]),
    (b'{"version": 4}', 4, ["patch"]),
    (b'{"version": 4, "patch": {}, "force": true}', 4, ["force"]),
])
def test_malformed_desired_messages_are_refused_with_located_problems(payload, version, locs):
    with pytest.raises(DesiredConfigError) as caught:
        parse_desired(payload)
    assert caught.value.version == version
    assert [p.loc for p in caught.value.problems] == locs
    assert all(p.msg for p in caught.value.problems)


@pytest.mark.parametrize("version", [0, -1, True, "2", None])
def test_the_desired_builder_refuses_what_the_parser_would(version):
    with pytest.raises(ValueError):
        config_desired_payload(version, {})


def test_reported_payload_shape_and_masking():
    body = config_reported_payload(5, "rejected", [{"loc": "cameras.0.source", "msg": "cannot open rtsp://u:pw1@h/s"}], ts=7.0)
    assert body == {"version": 5, "status": "rejected", "errors": [{"loc": "cameras.0.source", "msg": "cannot open rtsp://u:***@h/s"}], "ts": 7.0}
    with pytest.raises(ValueError):
        config_reported_payload(5, "done")


@pytest.mark.parametrize("patch, msg, hidden", [
    ({"mqtt": {"password": "hunter2-x"}}, "login with hunter2-x refused", "hunter2-x"),
    ({"api": {"token": "tok-123456"}}, "token tok-123456 too short", "tok-123456"),
    ({"cameras": [{"source": "rtsp://admin:Cam-pw@10.0.0.9/s"}]}, "cannot reach rtsp://admin:Cam-pw@10.0.0.9/s", "Cam-pw"),
    ({"cameras": [{"source": "http://h/x?pwd=abc123"}]}, "bad source http://h/x?pwd=abc123", "abc123"),
])
def test_scrub_keeps_every_secret_of_the_patch_out_of_the_errors(patch, msg, hidden):
    [problem] = scrub([Problem("x", msg)], patch)
    assert hidden not in problem.msg and "***" in problem.msg
    assert hidden not in json.dumps(config_reported_payload(1, "rejected", [problem.as_dict()]))
