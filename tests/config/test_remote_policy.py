"""What ``R/config/desired`` may change: a fixed allow-list over the whole configuration's diff."""
import pytest

from edge_app.config.remote_policy import MAX_PROBLEMS, broker_problems
from edge_app.config.file import merge_patch, parse_config

BASE = {
    "device_id": "dev1",
    "cameras": [{"id": "cam1", "source": "rtsp://10.0.0.5/s",
                 "zones": [{"name": "door", "polygon": [[0, 0], [1, 0], [1, 1]]}]}],
    "model": {"path": "models/m.onnx", "labels": "models/labels.txt"},
    "mqtt": {"host": "10.0.0.2", "username": "dev1", "password": "broker-secret-1"},
    "api": {"host": "127.0.0.1", "token": "owner-token-1234567890"},
    "fleet": {"remote_config": True, "desired_key": "k" * 40},
}


def config(patch=None):
    return parse_config(merge_patch(BASE, patch or {}))


def locs(patch):
    return [p.loc for p in broker_problems(config(), config(patch))]


MASK = {"polygon": [[0, 0], [0.5, 0], [0.5, 0.5]]}

REFUSED = [
    ("the attack: a new API token", {"api": {"token": "attacker-owned-token-1234567890"}}, "api.token"),
    ("api token removed", {"api": {"token": None}}, "api.token"),
    ("api host", {"api": {"host": "0.0.0.0", "token": "owner-token-1234567890"}}, "api.host"),
    ("api port", {"api": {"port": 9999}}, "api.port"),
    ("api unsafe switch", {"api": {"allow_unsafe_sources": True}}, "api.allow_unsafe_sources"),
    ("api allowed hosts", {"api": {"allowed_hosts": ["evil.example"]}}, "api.allowed_hosts.0"),
    ("mqtt port", {"mqtt": {"port": 1884}}, "mqtt.port"),
    ("mqtt host", {"mqtt": {"host": "203.0.113.9"}}, "mqtt.host"),
    ("mqtt topic prefix", {"mqtt": {"topic_prefix": "elsewhere"}}, "mqtt.topic_prefix"),
    ("mqtt tls off", {"mqtt": {"tls": {"insecure": True}}}, "mqtt.tls.insecure"),
    ("mqtt tls ca file", {"mqtt": {"tls": {"ca_certs": "/tmp/ca.pem"}}}, "mqtt.tls.ca_certs"),
    ("device id", {"device_id": "other"}, "device_id"),
    ("remote config off", {"fleet": {"remote_config": False}}, "fleet.remote_config"),
    ("desired key replaced", {"fleet": {"desired_key": "a" * 40}}, "fleet.desired_key"),
    ("desired key removed", {"fleet": {"desired_key": None}}, "fleet.desired_key"),
    ("discovery prefix", {"homeassistant": {"discovery_prefix": "evil"}}, "homeassistant.discovery_prefix"),
    ("model path", {"model": {"path": "models/other.onnx"}}, "model.path"),
    ("labels file", {"model": {"labels": "models/other.txt"}}, "model.labels"),
    ("engine dir", {"model": {"engine_dir": "elsewhere"}}, "model.engine_dir"),
    ("calibration dir", {"model": {"calibration_dir": "models/calib"}}, "model.calibration_dir"),
    ("events dir", {"events": {"dir": "/tmp/events"}}, "events.dir"),
    ("logging", {"logging": {"level": "DEBUG"}}, "logging.level"),
    ("capture timing", {"capture": {"stall_timeout_s": 1}}, "capture.stall_timeout_s"),
    ("snapshots", {"snapshots": {"jpeg_quality": 10}}, "snapshots.jpeg_quality"),
    # Drawn in Python at any size and rate: 8192 x 8192 at 1000 fps cost ~760 MB of memory each.
    ("synthetic camera added", {"cameras": [BASE["cameras"][0],
                                            {"id": "big", "source": "test://noise?width=8192&height=8192&fps=1000"}]},
     "cameras.1.source"),
    ("synthetic source in place of a camera's", {"cameras": [{**BASE["cameras"][0], "source": "test://bars"}]},
     "cameras.0.source"),
    ("privacy mask on a camera that stays", {"cameras": [{**BASE["cameras"][0], "privacy": {"masks": [MASK]}}]},
     "cameras.0.privacy"),
    ("privacy detect switch", {"cameras": [{**BASE["cameras"][0], "privacy": {"detect": False}}]}, "cameras.0.privacy"),
]


@pytest.mark.parametrize("case, patch, loc", REFUSED, ids=[c[0] for c in REFUSED])
def test_the_broker_may_not_change(case, patch, loc):
    assert loc in locs(patch)


ALLOWED = [
    ("camera added", {"cameras": [BASE["cameras"][0], {"id": "cam2", "source": "rtsp://10.0.0.6/s", "fps_limit": 5}]}),
    ("camera removed", {"cameras": []}),
    ("detect switch", {"cameras": [{**BASE["cameras"][0], "detect": False}]}),
    ("zones and lines", {"cameras": [{**BASE["cameras"][0], "zones": [],
                                      "lines": [{"name": "gate", "points": [[0, 0], [1, 1]]}]}]}),
    ("camera added with a privacy mask", {"cameras": [BASE["cameras"][0], {"id": "cam2", "source": "rtsp://10.0.0.6/s",
                                                                           "privacy": {"masks": [MASK]}}]}),
    ("thresholds and classes", {"model": {"conf_threshold": 0.5, "iou_threshold": 0.3, "classes": ["person"]}}),
    ("tracking", {"tracking": {"enabled": False}}),
    ("events settings", {"events": {"enabled": False, "min_frames": 5, "labels": ["car"], "retain_days": 2}}),
    # health has no path of its own: the folders it watches are the state, events and record folders
    ("health settings", {"health": {"interval_s": 10, "publish_s": 60,
                                    "limits": {"temperature_c": 80, "disk_percent": 95, "throttling": False}}}),
]


@pytest.mark.parametrize("case, patch", ALLOWED, ids=[c[0] for c in ALLOWED])
def test_the_broker_may_change(case, patch):
    assert locs(patch) == []


def test_a_patch_mixing_allowed_and_refused_fields_names_only_the_refused_ones():
    assert locs({"model": {"conf_threshold": 0.5}, "api": {"port": 1}, "mqtt": {"keepalive": 60}}) == ["mqtt.keepalive", "api.port"]


def test_the_diff_not_the_patch_decides_so_a_whole_section_replaced_is_still_named():
    # Deleting the section with null brings back the defaults: every field that moves is named.
    assert {"api.token"} <= set(locs({"api": None}))
    assert locs({"fleet": None}) == ["fleet.remote_config", "fleet.desired_key"]


def test_an_unchanged_configuration_has_no_problems():
    assert broker_problems(config(), config()) == []


def test_the_report_stays_short():
    many = {"api": {"allowed_hosts": [f"h{i}.example" for i in range(100)]}}
    problems = broker_problems(config(), config(many))
    assert len(problems) == MAX_PROBLEMS + 1 and problems[-1].loc == ""


def test_remote_configuration_is_off_by_default_and_a_short_key_is_refused():
    from edge_app.config.file import ConfigError

    assert parse_config({"model": {"path": "m.onnx"}}).fleet.remote_config is False
    with pytest.raises(ConfigError) as err:
        parse_config({"model": {"path": "m.onnx"}, "fleet": {"desired_key": "short"}})
    assert [p.loc for p in err.value.problems] == ["fleet.desired_key"]


def test_the_desired_key_is_masked_like_the_api_token_and_kept_when_sent_back():
    from edge_app.config.secrets import restore_secrets
    from edge_app.config.file import redacted_dict

    current = config()
    shown = redacted_dict(current)
    assert shown["fleet"]["desired_key"] == "***" and "k" * 40 not in str(shown)
    data, _, problems = restore_secrets(shown, current)
    assert problems == [] and parse_config(data).fleet.desired_key == "k" * 40


def test_a_synthetic_source_already_running_may_stay_but_not_grow():
    bars = {"cameras": [{**BASE["cameras"][0], "source": "test://bars?width=320&height=240&fps=5"}]}
    current = config(bars)
    assert broker_problems(current, config(merge_patch(bars, {"cameras": [{**bars["cameras"][0], "detect": False}]}))) == []
    grown = {"cameras": [{**bars["cameras"][0], "source": "test://bars?width=8192&height=8192&fps=1000"}]}
    assert [p.loc for p in broker_problems(current, config(grown))] == ["cameras.0.source"]


def test_a_masked_camera_keeps_its_masks_when_the_broker_removes_the_camera_before_it():
    masked = {"id": "cam2", "source": "rtsp://10.0.0.6/s", "privacy": {"masks": [MASK]}}
    before = {"cameras": [BASE["cameras"][0], masked]}
    # by index, cameras.0.privacy changes; by camera id nothing of it does
    assert [p.loc for p in broker_problems(config(before), config({"cameras": [masked]}))] == []
    unmasked = {**masked, "privacy": {"masks": []}}
    assert [p.loc for p in broker_problems(config(before), config({"cameras": [unmasked]}))] == ["cameras.0.privacy"]


PROFILES = {"profiles": {"definitions": [{"name": "home"}, {"name": "away"}],
                         "schedule": [{"profile": "away", "days": ["mon"], "start": "08:00", "end": "18:00"}]}}


@pytest.mark.parametrize("patch, want", [
    ({"profiles": {"active": "away"}}, []),  # the fleet switches the active profile (docs/profiles.md)
    ({"profiles": {"hold_until": "2030-01-01T00:00:00+00:00"}}, ["profiles.hold_until"]),  # a hold for ever: no
    ({"profiles": {"default": "away"}}, ["profiles.default"]),
    ({"profiles": {"timezone": "Asia/Tokyo"}}, ["profiles.timezone"]),
    ({"profiles": {"schedule": []}}, ["profiles.schedule.0.profile", "profiles.schedule.0.days.0",
                                      "profiles.schedule.0.start", "profiles.schedule.0.end"]),
    ({"profiles": {"definitions": [{"name": "home"}, {"name": "away", "detect": {"cam1": False}}]}},
     ["profiles.definitions.1.detect.cam1"]),
], ids=["active", "hold_until", "default", "timezone", "schedule", "a profile's overrides"])
def test_the_broker_may_switch_the_active_profile_and_nothing_else_of_the_section(patch, want):
    current = parse_config(merge_patch(BASE, PROFILES))
    assert [p.loc for p in broker_problems(current, parse_config(merge_patch(merge_patch(BASE, PROFILES), patch)))] == want
