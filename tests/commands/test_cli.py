"""The command line as a user runs it: a real subprocess, real exit codes, real stderr."""
import json
import subprocess
import sys
import time

import pytest


def edge_app(*args, timeout_s=120, cwd=None):
    return subprocess.run([sys.executable, "-m", "edge_app", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout_s, cwd=cwd)


@pytest.fixture
def installed(tmp_path, model_path, int8_model_path, bus_clip):
    """A working directory laid out as the shipped configs expect: the models in engines/, the demo
    clip where scripts/demo.sh puts it in the demo's folder."""
    (tmp_path / "engines").mkdir()
    for name in ("yolov8n.onnx", "yolov8n_coco_dynbatch.onnx"):
        (tmp_path / "engines" / name).symlink_to(model_path)
    (tmp_path / "engines" / "gate.onnx").symlink_to(int8_model_path)  # two-models.yaml's second model
    (tmp_path / "demo.mp4").symlink_to(bus_clip)
    return tmp_path


def test_check_config_reports_typo_and_bad_value_with_exit_2(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "cameras:\n  - id: cam1\n    source: rtsp://10.0.0.5/s\n    fps_limt: 5\n"
        "model:\n  path: engines/y.onnx\nmqtt:\n  qos: 7\n"
    )
    result = edge_app("check-config", "-c", path)
    assert result.returncode == 2
    assert "cameras.0.fps_limt" in result.stderr and "unknown key" in result.stderr
    assert "mqtt.qos" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_config_accepts_the_shipped_examples(repo_root, installed):
    for path in sorted((repo_root / "configs").glob("*.yaml")):
        if path.name == "rtsp-camera.yaml":
            continue  # listens on all interfaces: needs the user's own token (next test)
        result = edge_app("check-config", "-c", path, cwd=installed)
        assert result.returncode == 0, (path, result.stderr)
        if path.name == "two-models.yaml":
            assert "model default engines/yolov8n.onnx, gate engines/gate.onnx" in result.stdout, result.stdout


def test_shipped_lan_example_needs_a_real_token(repo_root, tmp_path, installed):
    """The LAN example must not start with a placeholder token anyone could guess."""
    shipped = repo_root / "configs" / "rtsp-camera.yaml"
    result = edge_app("check-config", "-c", shipped)
    assert result.returncode == 2
    assert "api.token" in result.stderr and "Traceback" not in result.stderr
    with_token = tmp_path / "c.yaml"
    with_token.write_text(shipped.read_text().replace("token: null", "token: 3f9c2a7d41be60e8b5d2c9a1"))
    assert edge_app("check-config", "-c", with_token, cwd=installed).returncode == 0
    short = tmp_path / "short.yaml"
    short.write_text(shipped.read_text().replace("token: null", "token: change-me-too"))
    result = edge_app("check-config", "-c", short)
    assert result.returncode == 2 and "at least 16 characters" in result.stderr


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["run"], ["detect"]])
def test_bad_usage_exits_2(args):
    assert edge_app(*args).returncode == 2


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_missing_model_is_a_configuration_error_exit_2(tmp_path, command):
    """run must not exit 1 (systemd would restart it in a loop); check-config must catch it first."""
    path = tmp_path / "c.yaml"
    path.write_text(f"cameras: []\nmodel:\n  path: {tmp_path}/missing.onnx\nmqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = edge_app(command, "-c", path, timeout_s=60)
    assert result.returncode == 2, result.stderr
    assert f"model.path: model file {tmp_path}/missing.onnx does not exist" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "model_extra, loc, words",
    [
        ("  classes: [persn]\n", "model.classes", "did you mean 'person'"),
        ("  labels: {tmp}/nope.txt\n", "model.labels", "does not exist"),
    ],
)
@pytest.mark.parametrize("command", ["check-config", "run"])
def test_what_run_would_refuse_is_reported_by_check_config(tmp_path, model_path, command, model_extra, loc, words):
    path = tmp_path / "c.yaml"
    path.write_text(f"cameras: []\nmodel:\n  path: {model_path}\n{model_extra.format(tmp=tmp_path)}"
                    "mqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = edge_app(command, "-c", path, timeout_s=60)
    assert result.returncode == 2, result.stderr
    assert loc in result.stderr and words in result.stderr and "Traceback" not in result.stderr


def test_check_config_names_a_missing_camera_file(tmp_path, model_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"cameras:\n  - id: a\n    source: {tmp_path}/clip.mp4\nmodel:\n  path: {model_path}\n")
    result = edge_app("check-config", "-c", path)
    assert result.returncode == 2 and "cameras.0.source" in result.stderr and "clip.mp4 does not exist" in result.stderr


def test_detect_prints_one_json_line_per_image(model_path, bus_jpg, zidane_jpg):
    result = edge_app("detect", "--model", model_path, bus_jpg, zidane_jpg)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(l["width"], l["height"]) for l in lines] == [(810, 1080), (1280, 720)]
    bus_labels = [d["label"] for d in lines[0]["detections"]]
    assert bus_labels.count("person") == 4 and bus_labels.count("bus") == 1
    assert set(lines[0]["detections"][0]) == {"class_id", "label", "confidence", "bbox"}


def test_detect_unreadable_image_is_exit_1(model_path, tmp_path):
    bad = tmp_path / "x.jpg"
    bad.write_bytes(b"not a jpeg")
    result = edge_app("detect", "--model", model_path, bad)
    assert result.returncode == 1 and "x.jpg" in result.stderr and "Traceback" not in result.stderr


def test_build_engine_without_tensorrt_says_so(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  path: engines/y.onnx\n")
    result = edge_app("build-engine", "-c", path)
    assert result.returncode == 1
    assert "TensorRT" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_labels_unfit_for_mqtt_topics_are_refused_wherever_they_come_from(tmp_path, model_path, command):
    """Labels become MQTT topic levels (counts per label): a labels file or the model's metadata
    gets the checks configured labels get, and the problem is located."""
    from tests.detect.onnx_models import build_model

    labels = tmp_path / "labels.txt"
    labels.write_text("per+son\nbicycle\ncar\nmotorcycle\nairplane\nbus/#\n", encoding="utf-8")
    from_file = tmp_path / "file.yaml"
    from_file.write_text(f"cameras: []\nmodel:\n  path: {model_path}\n  labels: {labels}\n"
                         "mqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = edge_app(command, "-c", from_file, timeout_s=60)
    assert result.returncode == 2, result.stderr
    assert "model.labels" in result.stderr and "line 1" in result.stderr and "#, +, /" in result.stderr
    assert "Traceback" not in result.stderr

    model = build_model(tmp_path / "meta.onnx", metadata={"names": "{0: 'person', 1: 'bus/#'}"})
    from_metadata = tmp_path / "metadata.yaml"
    from_metadata.write_text(f"cameras: []\nmodel:\n  path: {model}\nmqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = edge_app(command, "-c", from_metadata, timeout_s=60)
    assert result.returncode == 2, result.stderr
    assert "model.path" in result.stderr and "'bus/#'" in result.stderr and "model.labels" in result.stderr
    assert "Traceback" not in result.stderr


def test_fleet_reset_forgets_the_desired_version_and_says_so(tmp_path, model_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"model:\n  path: {model_path}\nfleet:\n  remote_config: true\n")
    state = tmp_path / "config.desired.json"
    epoch = "ab" * 16
    state.write_text('{"version": 9007199254740992, "reported": null, "epoch": "%s"}' % epoch)
    before_ms = time.time() * 1000
    result = edge_app("fleet-reset", "-c", config)
    assert result.returncode == 0, result.stderr
    assert "9007199254740992" in result.stdout and "new fleet epoch" in result.stdout
    saved = json.loads(state.read_text())
    assert saved["version"] == 0 and saved["epoch"] is None and saved["retired_epochs"] == [epoch]
    assert saved["reset_at_ms"] >= before_ms
    again = edge_app("fleet-reset", "-c", config)
    assert again.returncode == 0 and "no desired configuration version was saved" in again.stdout
    assert json.loads(state.read_text())["retired_epochs"] == [epoch]


def test_fleet_reset_with_an_invalid_configuration_is_exit_2_and_keeps_the_state(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  path: m.onnx\nfleet:\n  remote_cfg: true\n")
    state = tmp_path / "config.desired.json"
    state.write_text('{"version": 3, "reported": null}')
    result = edge_app("fleet-reset", "-c", config)
    assert result.returncode == 2 and "fleet.remote_cfg" in result.stderr and state.exists()


PROFILES_YAML = """
cameras: [{id: cam1, source: "test://bars"}]
model: {path: MODEL}
profiles:
  timezone: Europe/Paris
  default: home
  definitions: [{name: home}, {name: away}]
  schedule:
    - {profile: away, days: [mon, tue, wed, thu, fri], start: "08:00", end: "18:00"}
"""


@pytest.mark.parametrize("extra_entry, returncode, words", [
    ("", 0, "profiles: home, away (time zone Europe/Paris); in force now: "),
    ('    - {profile: home, days: [fri], start: "17:00", end: "19:00"}\n', 2,
     "profiles.schedule.1: overlaps profiles.schedule.0 from fri 17:00"),
    ('    - {profile: party, days: [sat], start: "10:00", end: "12:00"}\n', 2,
     "profiles.schedule.1.profile: there is no profile 'party'"),
], ids=["valid", "overlapping", "unknown profile"])
def test_check_config_tells_the_profile_in_force_or_what_is_wrong_with_the_schedule(tmp_path, model_path,
                                                                                    extra_entry, returncode, words):
    path = tmp_path / "c.yaml"
    path.write_text(PROFILES_YAML.replace("MODEL", str(model_path)) + extra_entry)
    result = edge_app("check-config", "-c", path, cwd=tmp_path)
    assert result.returncode == returncode, result.stderr
    assert words in (result.stdout if returncode == 0 else result.stderr)
