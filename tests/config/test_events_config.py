"""The ``events`` section of the configuration (docs/configuration.md)."""
import pytest

from edge_app.config.schema import AppConfig, EventsConfig
from edge_app.config.file import ConfigError, parse_config

BASE = {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s"}]}


def problems(events):
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, "events": events})
    return [p.loc for p in err.value.problems]


def test_defaults_are_the_spec_example():
    events = parse_config(BASE).events
    assert events == EventsConfig(enabled=True, labels=[], min_frames=3, end_after_s=2.0, snapshots=True,
                                  dir="events", retain_days=7, max_mb=1024)


def test_the_spec_example_parses():
    spec = {"enabled": False, "labels": ["person", "car"], "min_frames": 5, "end_after_s": 4.5, "snapshots": False,
            "dir": "/var/lib/edge-app/events", "retain_days": 30, "max_mb": 4096}
    events = parse_config({**BASE, "events": spec}).events
    assert events.model_dump() == spec


@pytest.mark.parametrize("events, loc", [
    ({"min_frames": 0}, "events.min_frames"),
    ({"min_frames": 1.5}, "events.min_frames"),
    ({"end_after_s": 0}, "events.end_after_s"),
    ({"end_after_s": "nan"}, "events.end_after_s"),
    ({"end_after_s": 1e9}, "events.end_after_s"),
    ({"retain_days": 0}, "events.retain_days"),
    ({"retain_days": "inf"}, "events.retain_days"),
    ({"max_mb": 0}, "events.max_mb"),
    ({"dir": ""}, "events.dir"),
    ({"dir": "   "}, "events.dir"),
    ({"dir": "ev\nents"}, "events.dir"),
    ({"labels": ["per/son"]}, "events.labels"),
    ({"labels": ["#"]}, "events.labels"),
    ({"labels": [""]}, "events.labels"),
    ({"snapshots": "maybe"}, "events.snapshots"),
    ({"enable": True}, "events.enable"),
])
def test_bad_values_name_the_field(events, loc):
    assert loc in problems(events)


def test_every_field_has_a_title():
    props = AppConfig.model_json_schema()["$defs"]["EventsConfig"]["properties"]
    assert set(props) == {"enabled", "labels", "min_frames", "end_after_s", "snapshots", "dir", "retain_days", "max_mb"}
    for name, field in props.items():
        assert field.get("title"), f"events.{name} has no title"
