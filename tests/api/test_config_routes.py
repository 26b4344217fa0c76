"""GET/PUT/PATCH /api/v1/config: redaction, validation with field paths, persistence, merge patch."""
import copy
import shutil

import pytest

from edge_app.config.file import ConfigError, Problem, load_config
from tests.api.conftest import CAMERA_PASSWORD, MQTT_PASSWORD, TOKEN

JSON = {"Content-Type": "application/json"}


def test_get_config_redacts_secrets_and_camera_credentials(make_api):
    api = make_api({"api": {"token": TOKEN}})
    response = api.get("/api/v1/config", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    body = response.json()
    assert body["mqtt"]["password"] == "***"
    assert body["api"]["token"] == "***"
    assert body["cameras"][0]["source"] == "rtsp://admin:***@10.0.0.5:554/stream1"
    for secret in (MQTT_PASSWORD, TOKEN, CAMERA_PASSWORD):
        assert secret not in response.text
    assert "restart_required" not in body


def test_put_valid_config_applies_persists_and_keeps_redacted_secrets(api):
    config = api.get("/api/v1/config").json()
    config["cameras"][1]["fps_limit"] = 5
    config["snapshots"]["jpeg_quality"] = 70
    response = api.request("PUT", "/api/v1/config", json=config)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["restart_required"] == []
    assert body["cameras"][1]["fps_limit"] == 5 and body["mqtt"]["password"] == "***"
    saved = load_config(api.config_path)
    assert saved.cameras[1].fps_limit == 5 and saved.snapshots.jpeg_quality == 70
    # "***" sent back means "unchanged": the real secrets survive the round trip.
    assert saved.mqtt.password == MQTT_PASSWORD
    assert saved.cameras[0].source == f"rtsp://admin:{CAMERA_PASSWORD}@10.0.0.5:554/stream1"
    assert api.changes.current() == saved


@pytest.mark.parametrize(
    "mutate, loc",
    [
        (lambda c: c["cameras"][0].update(fps_limit=-1), "cameras.0.fps_limit"),
        (lambda c: c["cameras"][1].update(fps=5), "cameras.1.fps"),
        (lambda c: c["model"].update(path="model.txt"), "model.path"),
        (lambda c: c["mqtt"].update(qos=7), "mqtt.qos"),
        (lambda c: c["cameras"].append({"id": "front", "source": "test://bars"}), ""),
        (lambda c: c.pop("model"), "model"),
        (lambda c: c["api"].update(max_body_bytes=10), "api.max_body_bytes"),
    ],
)
def test_put_invalid_config_is_400_with_field_paths_and_changes_nothing(api, mutate, loc):
    before_bytes = api.config_path.read_bytes()
    before_config = api.changes.current()
    config = api.get("/api/v1/config").json()
    mutate(config)
    response = api.request("PUT", "/api/v1/config", json=config)
    assert response.status_code == 400
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    assert loc in [d["loc"] for d in body["details"]]
    assert all(set(d) == {"loc", "msg"} for d in body["details"])
    assert api.config_path.read_bytes() == before_bytes
    assert api.changes.current() == before_config
    assert api.service.applied.apply_calls == 0


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"3", b"null"])
def test_put_non_object_is_400(api, body):
    before_bytes = api.config_path.read_bytes()
    response = api.request("PUT", "/api/v1/config", data=body, headers=JSON)
    assert response.status_code == 400
    assert "error" in response.json()
    assert api.config_path.read_bytes() == before_bytes


@pytest.mark.parametrize(
    "patch, check",
    [
        ({"snapshots": {"jpeg_quality": 50}}, lambda c: c.snapshots.jpeg_quality == 50 and c.mqtt.password == MQTT_PASSWORD),
        ({"mqtt": {"password": None}}, lambda c: c.mqtt.password is None and c.mqtt.username == "edge"),
        ({"mqtt": {"password": "***"}}, lambda c: c.mqtt.password == MQTT_PASSWORD),
        ({"mqtt": {"password": "n3w"}}, lambda c: c.mqtt.password == "n3w"),
        ({"cameras": [{"id": "side", "source": "test://box"}]}, lambda c: [cam.id for cam in c.cameras] == ["side"]),
        ({"device_id": None}, lambda c: c.device_id == "edge-01"),
        ({"model": {"conf_threshold": 0.5, "classes": ["person"]}}, lambda c: c.model.conf_threshold == 0.5 and c.model.classes == ["person"]),
        ({}, lambda c: c.device_id == "edge-test"),
    ],
)
def test_patch_is_a_json_merge_patch_on_the_real_config(api, patch, check):
    response = api.request("PATCH", "/api/v1/config", json=patch)
    assert response.status_code == 200, response.text
    assert response.json()["restart_required"] == []
    saved = load_config(api.config_path)
    assert check(saved)
    assert api.changes.current() == saved


def test_patch_accepts_merge_patch_content_type(api):
    response = api.request(
        "PATCH", "/api/v1/config", data=b'{"logging": {"level": "debug"}}', headers={"Content-Type": "application/merge-patch+json"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["logging"]["level"] == "DEBUG"


@pytest.mark.parametrize(
    "patch, restart",
    [
        ({"api": {"port": 9090}}, ["api.port"]),
        ({"api": {"host": "0.0.0.0", "token": "a-token-of-24-characters"}}, ["api.host"]),
        ({"api": {"host": "0.0.0.0", "port": 9090, "token": "a-token-of-24-characters"}}, ["api.host", "api.port"]),
        ({"mqtt": {"port": 8883, "password": MQTT_PASSWORD}}, []),  # a new broker needs the password again
    ],
)
def test_settings_that_need_a_restart_are_named(api, patch, restart):
    response = api.request("PATCH", "/api/v1/config", json=patch)
    assert response.status_code == 200
    assert response.json()["restart_required"] == restart
    assert load_config(api.config_path).api.port == patch.get("api", {}).get("port", 0)


@pytest.mark.parametrize(
    "patch, loc",
    [
        ({"cameras": [{"id": "bad id!", "source": "test://x"}]}, "cameras.0.id"),
        ({"model": {"path": None}}, "model.path"),
        ({"mqtt": {"keepalive": 1}}, "mqtt.keepalive"),
        ({"apii": {"port": 1}}, "apii"),
    ],
)
def test_invalid_patch_is_400_and_changes_nothing(api, patch, loc):
    before_bytes = api.config_path.read_bytes()
    response = api.request("PATCH", "/api/v1/config", json=patch)
    assert response.status_code == 400
    assert loc in [d["loc"] for d in response.json()["details"]]
    assert api.config_path.read_bytes() == before_bytes
    assert api.service.applied.apply_calls == 0


@pytest.mark.parametrize(
    "method, path, body, loc",
    [
        # JSON has booleans and numbers: a string or a number in their place is a client's
        # mistake, refused as the OpenAPI document's types say, not guessed at.
        ("PATCH", "/api/v1/config", {"homeassistant": {"enabled": 0}}, "homeassistant.enabled"),
        ("PATCH", "/api/v1/config", {"mqtt": {"tls": {"enabled": "yes"}}}, "mqtt.tls.enabled"),
        ("PATCH", "/api/v1/config", {"mqtt": {"port": "1883"}}, "mqtt.port"),
        ("PATCH", "/api/v1/config", {"mqtt": {"qos": False}}, "mqtt.qos"),  # False == 0 in Python
        ("PATCH", "/api/v1/config", {"events": {"min_frames": 3.5}}, "events.min_frames"),
        ("PATCH", "/api/v1/cameras/back", {"detect": 0}, "cameras.1.detect"),
        ("PATCH", "/api/v1/cameras/back", {"fps_limit": "5"}, "cameras.1.fps_limit"),
        ("POST", "/api/v1/cameras", {"id": "side", "source": "test://noise", "enabled": "false"}, "cameras.2.enabled"),
    ],
)
def test_values_of_the_wrong_json_type_are_400_and_change_nothing(api, method, path, body, loc):
    before_bytes = api.config_path.read_bytes()
    response = api.request(method, path, json=body)
    assert response.status_code == 400, response.text
    assert loc in [d["loc"] for d in response.json()["details"]]
    assert api.config_path.read_bytes() == before_bytes
    assert api.service.applied.apply_calls == 0


def test_an_invisible_character_in_a_label_is_400_at_its_field_and_changes_nothing(api):
    before_bytes = api.config_path.read_bytes()
    zone = {"name": "porch", "polygon": [[0, 0], [1, 0], [1, 1]], "labels": ["person\u2067"]}
    response = api.request("PATCH", "/api/v1/cameras/back", json={"zones": [zone]})
    assert response.status_code == 400, response.text
    details = response.json()["details"]
    assert [d["loc"] for d in details] == ["cameras.1.zones.0.labels"] and "U+2067" in details[0]["msg"], details
    assert api.config_path.read_bytes() == before_bytes
    assert api.service.applied.apply_calls == 0


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_config_error_from_apply_is_400(api, method):
    api.service.applied.refuse_apply = ConfigError([Problem("model.input_size", "the model has a fixed 640x640 input")])
    before_bytes = api.config_path.read_bytes()
    body = api.get("/api/v1/config").json() if method == "PUT" else {}
    if method == "PUT":
        body["model"]["input_size"] = 320
    else:
        body = {"model": {"input_size": 320}}
    response = api.request(method, "/api/v1/config", json=copy.deepcopy(body))
    assert response.status_code == 400
    assert response.json()["details"] == [{"loc": "model.input_size", "msg": "the model has a fixed 640x640 input"}]
    assert api.config_path.read_bytes() == before_bytes


@pytest.mark.parametrize(
    "data, headers, status",
    [
        (b'{"snapshots": ', JSON, 400),
        (b"", JSON, 400),
        (b'{"snapshots": {"jpeg_quality": NaN}}', JSON, 400),
        (b"\xff\xfe\xfa", JSON, 400),
        (b'{"snapshots": {}}', {"Content-Type": "text/plain"}, 415),
        (b'{"snapshots": {}}', {"Content-Type": "application/x-www-form-urlencoded"}, 415),
        (b'{"snapshots": {}}', {}, 415),
    ],
)
@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_bodies_that_are_not_json_are_refused(api, method, data, headers, status):
    response = api.request(method, "/api/v1/config", data=data, headers=headers)
    assert response.status_code == status
    assert response.headers["Content-Type"].startswith("application/json")
    assert isinstance(response.json()["error"], str)


def test_a_labels_file_with_labels_unfit_for_topics_is_400_and_changes_nothing(make_api, model_path, tmp_path):
    """Labels become MQTT topic levels: from a labels file they pass the checks configured ones pass."""
    models = tmp_path / "models"
    models.mkdir()
    model = models / "yolov8n.onnx"
    shutil.copyfile(model_path, model)
    labels = models / "labels.txt"
    labels.write_text("per+son\nbicycle\ncar\nmotorcycle\nairplane\nbus/#\n", encoding="utf-8")
    api = make_api({"model": {"path": str(model)}})
    before_bytes = api.config_path.read_bytes()

    response = api.request("PATCH", "/api/v1/config", json={"model": {"labels": str(labels)}})

    assert response.status_code == 400, response.text
    details = response.json()["details"]
    assert details[0]["loc"] == "model.labels" and "line 1" in details[0]["msg"], details
    assert "#, +, /" in details[0]["msg"], details
    assert api.config_path.read_bytes() == before_bytes
    assert api.service.applied.apply_calls == 0
