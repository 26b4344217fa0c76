"""The ``record`` section and ``cameras[].record`` (docs/configuration.md, docs/recording.md)."""
import pytest

from edge_app.config.file import ConfigError, parse_config
from edge_app.config.policy import unsafe_changes
from edge_app.config.remote_policy import broker_problems
from edge_app.config.schema import AppConfig
from edge_app.config.schema_record import RecordSettings

BASE = {"model": {"path": "m.onnx"}, "cameras": [{"id": "cam1", "source": "rtsp://h/s"},
                                                 {"id": "cam2", "source": "rtsp://h/t"}]}


def with_record(record=None, cam1=None):
    tree = {**BASE, "record": record or {}}
    if cam1 is not None:
        tree["cameras"] = [{**BASE["cameras"][0], "record": cam1}, BASE["cameras"][1]]
    return parse_config(tree)


def problems(record=None, cam1=None):
    with pytest.raises(ConfigError) as err:
        with_record(record, cam1)
    return [p.loc for p in err.value.problems]


def test_defaults_are_the_spec():
    record = parse_config(BASE).record
    assert record.model_dump() == {
        "dir": "recordings",
        "events": {"enabled": False, "pre_s": 5, "post_s": 5, "max_s": 300, "max_concurrent": 16,
                   "max_mb_per_hour": 4096},
        "continuous": {"enabled": False, "segment_s": 60},
        "retain": {"events_days": 30, "continuous_days": 3, "max_disk_percent": 80, "max_gb": None,
                   "reserve_mb": 512},
    }


@pytest.mark.parametrize("record, cam1, expected", [
    ({}, None, RecordSettings("cam1", False, 5.0, 5.0, 300.0, False, 60.0)),
    ({"events": {"enabled": True, "pre_s": 3}}, None, RecordSettings("cam1", True, 3.0, 5.0, 300.0, False, 60.0)),
    ({"events": {"enabled": True}}, {"enabled": False}, RecordSettings("cam1", False, 5.0, 5.0, 300.0, False, 60.0)),
    ({}, {"enabled": True, "pre_s": 2, "post_s": 8, "continuous": True},
     RecordSettings("cam1", True, 2.0, 8.0, 300.0, True, 60.0)),
    ({"continuous": {"enabled": True, "segment_s": 30}}, {}, RecordSettings("cam1", False, 5.0, 5.0, 300.0, True, 30.0)),
])
def test_a_cameras_settings_are_the_section_with_its_overrides(record, cam1, expected):
    config = with_record(record, cam1)
    assert config.record_settings("cam1") == expected
    # the other camera follows the section only
    other = config.record_settings("cam2")
    assert (other.events_enabled, other.pre_s) == (config.record.events.enabled, config.record.events.pre_s)


@pytest.mark.parametrize("record, cam1, loc", [
    ({"events": {"pre_s": -1}}, None, "record.events.pre_s"),
    ({"events": {"pre_s": 61}}, None, "record.events.pre_s"),
    ({"events": {"post_s": "nan"}}, None, "record.events.post_s"),
    ({"events": {"max_s": 5}}, None, "record.events.max_s"),
    ({"events": {"max_s": 1e9}}, None, "record.events.max_s"),
    ({"continuous": {"segment_s": 1}}, None, "record.continuous.segment_s"),
    ({"retain": {"events_days": 0}}, None, "record.retain.events_days"),
    ({"retain": {"continuous_days": "inf"}}, None, "record.retain.continuous_days"),
    ({"retain": {"max_disk_percent": 100}}, None, "record.retain.max_disk_percent"),
    ({"retain": {"max_gb": 0}}, None, "record.retain.max_gb"),
    ({"retain": {"reserve_mb": -1}}, None, "record.retain.reserve_mb"),
    ({"dir": ""}, None, "record.dir"),
    ({"dir": " "}, None, "record.dir"),
    ({"dir": "rec\nordings"}, None, "record.dir"),
    ({"event": {}}, None, "record.event"),
    ({}, {"pre_s": 100}, "cameras.0.record.pre_s"),
    ({}, {"post_s": -1}, "cameras.0.record.post_s"),
    ({}, {"enabled": "maybe"}, "cameras.0.record.enabled"),
    ({}, {"max_s": 10}, "cameras.0.record.max_s"),
])
def test_bad_values_name_the_field(record, cam1, loc):
    assert loc in problems(record, cam1)


def test_every_field_has_a_title():
    defs = AppConfig.model_json_schema()["$defs"]
    for model in ("RecordConfig", "RecordEventsConfig", "RecordContinuousConfig", "RecordRetainConfig",
                  "CameraRecordConfig"):
        for name, field in defs[model]["properties"].items():
            assert field.get("title"), f"{model}.{name} has no title"


def test_the_api_may_move_the_recording_folder_below_its_folder_only(tmp_path):
    old = with_record({"dir": str(tmp_path / "recordings")})
    inside = with_record({"dir": str(tmp_path / "recordings" / "2026")})
    outside = with_record({"dir": str(tmp_path / "recordings" / ".." / "etc")})
    assert unsafe_changes(old, inside, tmp_path) == []
    assert [p.loc for p in unsafe_changes(old, outside, tmp_path)] == ["record.dir"]


def test_the_broker_may_change_recording_but_not_its_folder():
    old = with_record()
    assert broker_problems(old, with_record({"events": {"enabled": True}}, {"pre_s": 1})) == []
    assert [p.loc for p in broker_problems(old, with_record({"dir": "elsewhere"}))] == ["record.dir"]
