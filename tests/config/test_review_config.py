"""The ``review`` section and ``cameras[].review`` (docs/notifications.md): alert rules name labels
the camera's model knows and zones the camera has, or the configuration is refused naming the field."""
import subprocess
import sys

import pytest

from edge_app.config.file import ConfigError, merge_patch, parse_config
from edge_app.config.schema import AppConfig
from edge_app.config.schema_review import ReviewAlertsConfig, ReviewConfig
from edge_app.config_change.checks import check_runtime

TRIANGLE = [[0, 0], [1, 0], [1, 1]]
BASE = {"model": {"path": "m.onnx"}, "cameras": [
    {"id": "front", "source": "rtsp://h/1", "zones": [{"name": "door", "polygon": TRIANGLE}]},
    {"id": "back", "source": "rtsp://h/2", "zones": [{"name": "yard", "polygon": TRIANGLE}]},
]}


def camera_review(index, review):
    cameras = [dict(cam) for cam in BASE["cameras"]]
    cameras[index]["review"] = review
    return {"cameras": cameras}


def problems(patch):
    with pytest.raises(ConfigError) as err:
        parse_config(merge_patch(BASE, patch))
    return [(p.loc, p.msg) for p in err.value.problems]


def test_defaults_make_every_event_an_alert_with_a_30_s_gap():
    config = parse_config(BASE)
    assert config.review == ReviewConfig(gap_s=30.0, alerts=ReviewAlertsConfig(labels=[], zones=[]))
    assert config.alert_rules("front") == ReviewAlertsConfig()


def test_a_cameras_rules_replace_the_devices():
    config = parse_config(merge_patch(BASE, {"review": {"gap_s": 5, "alerts": {"labels": ["person"]}},
                                             **camera_review(1, {"alerts": {"labels": ["car"], "zones": ["yard"]}})}))
    assert config.alert_rules("front").labels == ["person"]
    assert config.alert_rules("back") == ReviewAlertsConfig(labels=["car"], zones=["yard"])
    assert config.review.gap_s == 5


@pytest.mark.parametrize("patch, loc, words", [
    ({"review": {"alerts": {"zones": ["garden"]}}}, "review.alerts.zones.0", "no camera has a zone named 'garden'"),
    ({"review": {"alerts": {"zones": ["door", "pool"]}}}, "review.alerts.zones.1", "(zones: door, yard)"),
    # a zone of another camera is not one of this camera's
    (camera_review(0, {"alerts": {"zones": ["yard"]}}), "cameras.0.review.alerts.zones.0",
     "camera 'front' has no zone named 'yard' (its zones: door)"),
    ({"review": {"alerts": {"zones": ["a b"]}}}, "review.alerts.zones", "is not a zone name"),
    ({"review": {"alerts": {"labels": ["per/son"]}}}, "review.alerts.labels", "may not contain"),
    ({"review": {"gap_s": -1}}, "review.gap_s", ""),
    ({"review": {"gap_s": "inf"}}, "review.gap_s", ""),
    ({"review": {"gap_s": 7200}}, "review.gap_s", ""),
    ({"review": {"alert": {}}}, "review.alert", ""),
    (camera_review(1, {"alerts": {"label": ["car"]}}), "cameras.1.review.alerts.label", ""),
])
def test_bad_rules_name_the_field(patch, loc, words):
    found = problems(patch)
    assert any(where == loc and words in msg for where, msg in found), found


def runnable(model_path, patch):
    return AppConfig.model_validate(merge_patch({**BASE, "model": {"path": str(model_path)}}, patch))


@pytest.mark.parametrize("patch, expected", [
    ({"review": {"alerts": {"labels": ["person", "car"]}}}, []),
    ({"review": {"alerts": {"labels": ["person", "unicorn"]}}}, [("review.alerts.labels.1", "'unicorn'")]),
    (camera_review(1, {"alerts": {"labels": ["dragon"]}}),
     [("cameras.1.review.alerts.labels.0", "the model 'default' of camera 'back' has no label 'dragon'")]),
    (camera_review(1, {"alerts": {"labels": ["dog"]}}), []),
])
def test_alert_labels_are_checked_against_the_models_labels(model_path, patch, expected):
    found = [(p.loc, p.msg) for p in check_runtime(runnable(model_path, patch))]
    assert len(found) == len(expected), found
    for (loc, msg), (want_loc, words) in zip(found, expected):
        assert loc == want_loc and words in msg


def test_unchanged_rules_read_no_model_again(model_path, tmp_path):
    running = runnable(model_path, {"review": {"alerts": {"labels": ["unicorn"]}}})
    assert check_runtime(running, previous=running) == []


def test_check_config_refuses_an_unknown_alert_label_naming_the_field(tmp_path, model_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"cameras:\n  - id: c\n    source: rtsp://cam.local/1\nmodel:\n  path: {model_path}\n"
                    "review:\n  alerts:\n    labels: [person, unicorn]\nmqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "review.alerts.labels.1:" in result.stderr and "'unicorn'" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_config_refuses_an_unknown_alert_zone_naming_the_field(tmp_path, model_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"cameras:\n  - id: c\n    source: rtsp://cam.local/1\nmodel:\n  path: {model_path}\n"
                    "review:\n  alerts:\n    zones: [driveway]\nmqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "review.alerts.zones.0: no camera has a zone named 'driveway'" in result.stderr
