"""plan_changes: what a configuration edit restarts, reloads or reconnects."""
import pytest

from edge_app.config.file import merge_patch, parse_config
from edge_app.config_change.plan import plan_changes

BASE = {
    "device_id": "edge-01",
    "cameras": [{"id": "a", "source": "test://bars"}, {"id": "b", "source": "test://noise"}],
    "model": {"path": "m.onnx"},
}


@pytest.mark.parametrize(
    "patch, expected",
    [
        ({}, {}),
        ({"cameras": [{"id": "a", "source": "test://bars", "fps_limit": 2}, {"id": "b", "source": "test://noise"}]}, {"cameras_changed": ("a",)}),
        ({"cameras": [{"id": "a", "source": "test://bars"}]}, {"cameras_removed": ("b",)}),
        ({"cameras": BASE["cameras"] + [{"id": "c", "source": "test://black"}]}, {"cameras_added": ("c",)}),
        ({"model": {"path": "other.onnx"}}, {"reload_model": True}),
        ({"model": {"conf_threshold": 0.5}}, {"retune_model": True}),
        ({"mqtt": {"host": "10.0.0.9"}}, {"reconnect_mqtt": True}),
        ({"device_id": "edge-02"}, {"reconnect_mqtt": True}),
        ({"api": {"port": 9090}}, {"restart_required": ["api.port"]}),
        ({"api": {"token": "t0ken"}}, {}),  # the API reads the token on every request
        ({"capture": {"stall_timeout_s": 3}}, {"cameras_changed": ("a", "b")}),
        # read by the analysis, not by capture: the camera keeps streaming
        ({"cameras": [{"id": "a", "source": "test://bars", "detect": False}, {"id": "b", "source": "test://noise"}]}, {}),
        ({"cameras": [{"id": "a", "source": "test://bars", "lines": [{"name": "g", "points": [[0.5, 0], [0.5, 1]]}]},
                      {"id": "b", "source": "test://noise"}]}, {}),
        ({"events": {"dir": "elsewhere"}}, {"restart_required": ["events.dir"]}),
        ({"record": {"dir": "elsewhere"}}, {"restart_required": ["record.dir"]}),
        # read by the recorder, which reconnects a camera only when it starts or stops being recorded
        ({"record": {"events": {"enabled": True, "pre_s": 2}}}, {}),
        ({"cameras": [{"id": "a", "source": "test://bars", "record": {"pre_s": 1}}, {"id": "b", "source": "test://noise"}]},
         {}),
        ({"events": {"retain_days": 1}}, {}),
        # alert rules are read per event message: nothing restarts
        ({"review": {"gap_s": 5, "alerts": {"labels": ["person"]}}}, {}),
        ({"cameras": [{"id": "a", "source": "test://bars", "review": {"alerts": {"labels": ["car"]}}},
                      {"id": "b", "source": "test://noise"}]}, {}),
    ],
)
def test_plan_changes(patch, expected):
    old = parse_config(BASE)
    new = parse_config(merge_patch(BASE, patch))
    plan = plan_changes(old, new)
    defaults = {"cameras_added": (), "cameras_removed": (), "cameras_changed": (), "reload_model": False,
                "retune_model": False, "reconnect_mqtt": False, "restart_required": []}
    for key, value in {**defaults, **expected}.items():
        assert getattr(plan, key) == value, key
