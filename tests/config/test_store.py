"""Configuration: validation with field paths, YAML loading, atomic save, redaction, merge patch."""
import logging
import os
import subprocess
import sys

import pytest
import yaml

from edge_app.config.file import (
    REDACTED,
    ConfigError,
    load_config,
    merge_patch,
    parse_config,
    redacted_dict,
    remove_stale_temp_files,
    save_config,
)

MINIMAL = {"cameras": [{"id": "cam1", "source": "rtsp://10.0.0.5/s"}], "model": {"path": "engines/y.onnx"}}


def problems(data):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return {p.loc: p.msg for p in info.value.problems}


def test_minimal_config_gets_spec_defaults():
    cfg = parse_config(MINIMAL)
    assert cfg.device_id == "edge-01"
    assert cfg.mqtt.topic_prefix == "edge_app" and cfg.mqtt.qos == 1 and cfg.mqtt.max_queue == 10000
    assert cfg.api.port == 8080 and cfg.api.max_body_bytes == 65536
    assert cfg.model.backend == "auto" and cfg.model.max_batch == 1 and cfg.model.batch_timeout_ms == 5
    assert cfg.cameras[0].realtime is True and cfg.cameras[0].loop is False
    assert cfg.snapshots.jpeg_quality == 85


@pytest.mark.parametrize(
    "mutate, loc",
    [
        (lambda d: d["cameras"][0].update(fps_limt=3), "cameras.0.fps_limt"),
        (lambda d: d["cameras"][0].update(fps_limit=-1), "cameras.0.fps_limit"),
        (lambda d: d["cameras"][0].update(id="bad id!"), "cameras.0.id"),
        (lambda d: d["cameras"][0].update(source="ftp://x/y"), "cameras.0.source"),
        (lambda d: d["cameras"][0].update(source="gst:videotestsrc ! fakesink"), "cameras.0.source"),
        (lambda d: d["cameras"].append({"id": "cam1", "source": "test://bars"}), ""),
        (lambda d: d["model"].update(path="model.pt"), "model.path"),
        (lambda d: d["model"].update(backend="openvino"), "model.backend"),
        (lambda d: d["model"].update(input_size=500), "model.input_size"),
        (lambda d: d.update(mqtt={"qos": 3}), "mqtt.qos"),
        (lambda d: d.update(mqtt={"port": 70000}), "mqtt.port"),
        (lambda d: d.update(api={"tokn": "x"}), "api.tokn"),
        (lambda d: d.update(colour="red"), "colour"),
        (lambda d: d.pop("model"), "model"),
        # Bounds and hardening (a hostile or careless config must not exhaust the box).
        (lambda d: d.update(cameras=[{"id": f"c{i}", "source": "test://bars"} for i in range(65)]), "cameras"),
        (lambda d: d.update(api={"max_body_bytes": 10**9}), "api.max_body_bytes"),
        (lambda d: d.update(mqtt={"max_queue": 10**8}), "mqtt.max_queue"),
        (lambda d: d.update(mqtt={"topic_prefix": "edge\napp"}), "mqtt.topic_prefix"),
        (lambda d: d.update(mqtt={"client_id": "a\x00b"}), "mqtt.client_id"),
        (lambda d: d.update(api={"host": "0.0.0.0"}), "api.token"),
        (lambda d: d.update(api={"host": "192.0.2.7", "token": "short"}), "api.token"),
        (lambda d: d.update(api={"host": "", "token": None}), "api.token"),
        (lambda d: d.update(api={"tls": {"enabled": True}}), "api.tls"),
        (lambda d: d.update(api={"allowed_hosts": ["bad host/"]}), "api.allowed_hosts"),
    ],
)
def test_invalid_values_name_their_field(mutate, loc):
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    mutate(data)
    found = problems(data)
    assert loc in found, found


@pytest.mark.parametrize(
    "api",
    [
        {"host": "127.0.0.1"},
        {"host": "localhost"},
        {"host": "::1"},
        {"host": "127.0.0.2"},
        {"host": "0.0.0.0", "token": "0123456789abcdef"},
        {"host": "0.0.0.0", "enabled": False},
    ],
)
def test_api_token_rule_accepts_loopback_or_a_long_token(api):
    assert parse_config({**MINIMAL, "api": api}).api.host == api["host"]


def test_every_problem_is_reported_at_once():
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    data["cameras"][0]["fps_limt"] = 3
    data["mqtt"] = {"qos": 5}
    assert {"cameras.0.fps_limt", "mqtt.qos"} <= set(problems(data))


def test_unknown_key_message_says_to_check_spelling():
    data = dict(MINIMAL, devce_id="x")
    assert "unknown key" in problems(data)["devce_id"]


def test_unknown_key_suggests_the_nearest_valid_one_at_its_place():
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    data["devce_id"] = "x"
    data["model"] = {**data.get("model", {}), "max_bacth": 2}
    data["cameras"][0]["fps_limt"] = 3
    data["cameras"][0]["zones"] = [{"name": "z", "polygon": [[0, 0], [1, 0], [1, 1]], "lables": ["person"]}]
    found = problems(data)
    assert found["devce_id"] == "unknown key (did you mean device_id?)"
    assert found["model.max_bacth"] == "unknown key (did you mean max_batch?)"
    assert found["cameras.0.fps_limt"] == "unknown key (did you mean fps_limit?)"
    assert found["cameras.0.zones.0.lables"] == "unknown key (did you mean labels?)"


def test_unknown_key_far_from_any_says_to_check_spelling():
    assert problems(dict(MINIMAL, zzzzqq=1))["zzzzqq"] == "unknown key (check the spelling)"


@pytest.mark.parametrize("text, fragment", [("model: [unclosed", "not valid YAML"), ("- just\n- a list\n", "mapping")])
def test_bad_yaml_is_a_config_error(tmp_path, text, fragment):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert fragment in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_save_is_atomic_and_round_trips(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("old: content\n")
    os.chmod(path, 0o640)
    cfg = parse_config(dict(MINIMAL, mqtt={"password": "s3cret"}))
    save_config(cfg, path)
    assert load_config(path) == cfg
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]  # no temp file left behind
    assert "s3cret" in path.read_text()  # the file keeps real secrets; only views redact


CRASH_MID_SAVE = """
import os, sys
from edge_app.config.file import parse_config, save_config
os.replace = lambda *args: os._exit(9)  # the power goes between writing the temp file and renaming it
save_config(parse_config({"cameras": [], "model": {"path": "y.onnx"}, "api": {"token": "the-token-of-this-box-1234"}}),
            sys.argv[1])
"""


def test_temp_files_of_a_save_that_never_finished_are_removed_and_nothing_else(tmp_path, caplog):
    path = tmp_path / "config.yaml"
    save_config(parse_config(MINIMAL), path)
    crashed = subprocess.run([sys.executable, "-c", CRASH_MID_SAVE, str(path)], capture_output=True, text=True)
    assert crashed.returncode == 9, crashed.stderr
    stale = [p for p in tmp_path.iterdir() if p.name != "config.yaml"]
    assert len(stale) == 1 and stale[0].name.startswith(".config.yaml.") and stale[0].name.endswith(".tmp"), stale
    assert oct(stale[0].stat().st_mode & 0o777) == "0o600" and "the-token-of-this-box" in stale[0].read_text()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "precious.yaml"
    target.write_text("not ours\n")
    kept = [tmp_path / ".config.yaml.linkname.tmp", tmp_path / ".config.yaml.adirname.tmp",
            tmp_path / ".other.yaml.abcd1234.tmp", tmp_path / ".config.yaml.abcd1234.tmp.keep",
            tmp_path / "config.yaml.bak", tmp_path / ".config.yaml..tmp"]
    kept[0].symlink_to(target)
    kept[1].mkdir()
    for other in kept[2:]:
        other.write_text("someone else's\n")

    caplog.set_level(logging.INFO, logger="edge_app.config.file")
    assert remove_stale_temp_files(path) == [stale[0]]
    assert not stale[0].exists()
    assert all(p.is_symlink() or p.exists() for p in kept) and target.read_text() == "not ours\n"
    assert load_config(path) == parse_config(MINIMAL)
    assert [r.levelno for r in caplog.records if stale[0].name in r.getMessage()] == [logging.WARNING]
    assert remove_stale_temp_files(path) == []


def test_redaction_hides_secrets_and_url_credentials():
    cfg = parse_config({**MINIMAL, "cameras": [{"id": "c", "source": "rtsp://admin:hunter2@10.0.0.5:554/s"}],
                        "mqtt": {"password": "pw"}, "api": {"token": "tok"}})
    shown = redacted_dict(cfg)
    assert shown["mqtt"]["password"] == REDACTED and shown["api"]["token"] == REDACTED
    assert shown["cameras"][0]["source"] == "rtsp://admin:***@10.0.0.5:554/s"
    assert "hunter2" not in str(shown)


@pytest.mark.parametrize(
    "target, patch, result",
    [  # RFC 7396 appendix A examples
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc7396(target, patch, result):
    assert merge_patch(target, patch) == result
