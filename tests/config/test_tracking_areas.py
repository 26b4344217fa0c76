"""Configuration of tracking, zones and lines (docs/configuration.md)."""
import copy
import subprocess
import sys

import pytest
import yaml

from edge_app.config.schema import AppConfig
from edge_app.config.file import ConfigError, parse_config

ZONE = {"name": "driveway", "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 1.0], [0.1, 1.0]], "labels": []}
LINE = {"name": "gate", "points": [[0.5, 0.0], [0.5, 1.0]], "labels": []}


def base(**camera):
    return {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s", **camera}]}


def problems(data):
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    return [(p.loc, p.msg) for p in err.value.problems]


def test_defaults_change_nothing_for_an_old_configuration():
    cfg = parse_config(base())
    cam = cfg.cameras[0]
    assert cfg.tracking.enabled is True
    assert cam.detect is True and cam.zones == [] and cam.lines == []


def test_the_spec_example_parses():
    cfg = parse_config({**base(detect=False, zones=[ZONE], lines=[LINE]), "tracking": {"enabled": False}})
    cam = cfg.cameras[0]
    assert cam.detect is False and cfg.tracking.enabled is False
    assert cam.zones[0].name == "driveway" and cam.zones[0].polygon[2] == (0.6, 1.0)
    assert cam.lines[0].points == [(0.5, 0.0), (0.5, 1.0)]


@pytest.mark.parametrize("zone, loc, msg", [
    ({**ZONE, "name": "drive way"}, "cameras.0.zones.0.name", "pattern"),
    ({**ZONE, "name": ""}, "cameras.0.zones.0.name", "pattern"),
    ({**ZONE, "name": "x" * 65}, "cameras.0.zones.0.name", "pattern"),
    ({**ZONE, "polygon": [[0, 0], [1, 1]]}, "cameras.0.zones.0.polygon", "at least 3"),
    ({**ZONE, "polygon": [[0, 0], [1.2, 0], [1, 1]]}, "cameras.0.zones.0.polygon.1.0", "less than or equal to 1"),
    ({**ZONE, "polygon": [[0, 0], [1, -0.1], [1, 1]]}, "cameras.0.zones.0.polygon.1.1", "greater than or equal to 0"),
    ({**ZONE, "polygon": [[0, 0], [1, 0], [1, 1, 1]]}, "cameras.0.zones.0.polygon.2", "at most 2"),
    ({**ZONE, "polygon": [[0, 0], [0.5, 0.5], [1, 1]]}, "cameras.0.zones.0.polygon", "no area"),
    ({**ZONE, "polygon": [[0, 0], ["nan", 0], [1, 1]]}, "cameras.0.zones.0.polygon.1.0", "finite"),
    ({**ZONE, "polygon": [[i / 100, (i % 2) / 2] for i in range(65)]}, "cameras.0.zones.0.polygon", "at most 64"),
    ({**ZONE, "labels": ["person/#"]}, "cameras.0.zones.0.labels", "may not contain"),
    ({**ZONE, "labels": [" "]}, "cameras.0.zones.0.labels", "empty"),
    ({**ZONE, "labels": ["x" * 129]}, "cameras.0.zones.0.labels", "at most 128 characters"),
    ({**ZONE, "labels": ["person"] * 129}, "cameras.0.zones.0.labels", "at most 128 items"),
    ({**ZONE, "colour": "red"}, "cameras.0.zones.0.colour", "unknown key"),
])
def test_bad_zones_name_the_field(zone, loc, msg):
    got = problems(base(zones=[zone]))
    assert any(l == loc and msg in m for l, m in got), got


@pytest.mark.parametrize("line, loc, msg", [
    ({**LINE, "points": [[0.5, 0.0]]}, "cameras.0.lines.0.points", "at least 2"),
    ({**LINE, "points": [[0.5, 0.0], [0.5, 1.0], [0.2, 0.2]]}, "cameras.0.lines.0.points", "at most 2"),
    ({**LINE, "points": [[0.5, 0.5], [0.5, 0.5]]}, "cameras.0.lines.0.points", "must differ"),
    ({**LINE, "points": [[0.5, 0.0], [0.5, 2]]}, "cameras.0.lines.0.points.1.1", "less than or equal to 1"),
    ({**LINE, "name": "gate!"}, "cameras.0.lines.0.name", "pattern"),
    ({**LINE, "labels": ["car+"]}, "cameras.0.lines.0.labels", "may not contain"),
    ({"name": "gate"}, "cameras.0.lines.0.points", "required"),
])
def test_bad_lines_name_the_field(line, loc, msg):
    got = problems(base(lines=[line]))
    assert any(l == loc and msg in m for l, m in got), got


@pytest.mark.parametrize("kind, item", [("zones", ZONE), ("lines", LINE)])
def test_names_are_unique_across_the_device(kind, item):
    data = base(**{kind: [item]})
    data["cameras"].append({"id": "cam2", "source": "rtsp://h/t", kind: [copy.deepcopy(item)]})
    got = problems(data)
    assert got == [("cameras", f"cameras.1.{kind}.0.name: {kind[:-1]} name {item['name']!r} is already used by cameras.0.{kind}.0.name")]


@pytest.mark.parametrize("kind, item", [("zones", ZONE), ("lines", LINE)])
def test_names_are_unique_within_a_camera(kind, item):
    got = problems(base(**{kind: [item, copy.deepcopy(item)]}))
    assert got[0][0] == "cameras" and f"cameras.0.{kind}.1.name" in got[0][1]


def test_a_zone_and_a_line_may_share_a_name():
    cfg = parse_config(base(zones=[{**ZONE, "name": "gate"}], lines=[LINE]))
    assert cfg.cameras[0].zones[0].name == cfg.cameras[0].lines[0].name == "gate"


@pytest.mark.parametrize("tracking, loc", [({"enabled": "maybe"}, "tracking.enabled"), ({"on": True}, "tracking.on")])
def test_bad_tracking_section(tracking, loc):
    assert loc in [l for l, _ in problems({**base(), "tracking": tracking})]


def test_detect_must_be_a_boolean():
    assert "cameras.0.detect" in [l for l, _ in problems(base(detect="sometimes"))]


def test_new_fields_have_titles():
    schema = AppConfig.model_json_schema()
    for model in ("ZoneConfig", "LineConfig", "TrackingConfig", "CameraConfig"):
        for name, field in schema["$defs"][model]["properties"].items():
            assert field.get("title"), f"{model}.{name} has no title"


@pytest.mark.parametrize("decoder", ["auto", "ffmpeg", "gstreamer", "nvdec"])
def test_decoder_choices_parse(decoder):
    assert parse_config(base(decoder=decoder)).cameras[0].decoder == decoder


def test_decoder_defaults_to_auto_and_rejects_unknown_names():
    assert parse_config(base()).cameras[0].decoder == "auto"
    assert "cameras.0.decoder" in [l for l, _ in problems(base(decoder="vaapi"))]


@pytest.mark.parametrize("rules, loc, msg", [
    ({"loitering_s": 30}, "cameras.0.zones.0.loitering_s", "loitering_s needs the zone's labels"),
    ({"loitering_s": 0}, "cameras.0.zones.0.loitering_s", "greater than 0"),
    ({"loitering_s": -5, "labels": ["person"]}, "cameras.0.zones.0.loitering_s", "greater than 0"),
    ({"loitering_s": "inf", "labels": ["person"]}, "cameras.0.zones.0.loitering_s", "finite"),
    ({"loitering_s": 8 * 24 * 3600, "labels": ["person"]}, "cameras.0.zones.0.loitering_s", "less than or equal"),
    ({"max_objects": -1}, "cameras.0.zones.0.max_objects", "greater than or equal to 0"),
    ({"max_objects": 2.5}, "cameras.0.zones.0.max_objects", "integer"),
    ({"max_objects": 10_001}, "cameras.0.zones.0.max_objects", "less than or equal"),
])
def test_bad_loitering_and_occupancy_rules_name_the_field(rules, loc, msg):
    got = problems(base(zones=[{**ZONE, **rules}]))
    assert any(l == loc and msg in m for l, m in got), got


@pytest.mark.parametrize("rules", [
    {},
    {"loitering_s": 30, "labels": ["person"]},
    {"max_objects": 0},
    {"max_objects": 4, "loitering_s": 0.5, "labels": ["person", "dog"]},
])
def test_loitering_and_occupancy_rules_parse(rules):
    zone = parse_config(base(zones=[{**ZONE, **rules}])).cameras[0].zones[0]
    assert (zone.loitering_s, zone.max_objects) == (rules.get("loitering_s"), rules.get("max_objects"))


def test_check_config_names_a_loitering_zone_without_labels(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(base(zones=[{**ZONE, "loitering_s": 30}])))
    result = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cameras.0.zones.0.loitering_s" in result.stderr and "needs the zone's labels" in result.stderr, result.stderr
