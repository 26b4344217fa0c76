"""End to end, two models on one appliance: real RTSP cameras -> ``edge-app run`` (subprocess, the
real YOLOv8n float32 and int8 models on ONNX Runtime, CPU) -> a real Mosquitto, and the REST API.

Each camera's detections come from its model (the payload's ``model``); a corrupt model added
through the API fails alone, with the reason in the status, while the others keep publishing;
reloading one model leaves the other untouched.
"""

import pytest

from testkit.waiting import wait_until
from tests.support.model_files import models_dir  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow

TOPIC = "edge_app/e2e/cameras/{}/detections"


def _models(app):
    return {m["name"]: m for m in app.get("/api/v1/status").json()["models"]}


def test_each_camera_is_analysed_by_its_model_and_one_model_fails_or_reloads_alone(
    rtsp_server_factory, bus_clip, zidane_clip, mosquitto_broker, mqtt_collector, appliance_factory, models_dir
):
    rtsp = rtsp_server_factory({"bus": bus_clip, "zidane": zidane_clip})
    collector = mqtt_collector(mosquitto_broker, "edge_app/e2e/cameras/+/detections")
    events = mqtt_collector(mosquitto_broker, "edge_app/e2e/events")
    engines = str(models_dir / "engines")
    cameras = [{"id": "bus", "source": rtsp.url("bus"), "fps_limit": 3},
               {"id": "zidane", "source": rtsp.url("zidane"), "fps_limit": 3, "model": "int8"}]
    app = appliance_factory(cameras, models_dir / "general.onnx", mosquitto_broker, model={"engine_dir": engines},
                            models=[{"name": "int8", "path": str(models_dir / "int8.onnx"), "engine_dir": engines}])

    # Each camera's detections come from its own model, and they are the right detections.
    bus = collector.wait_for_count(3, TOPIC.format("bus"), timeout_s=90)[-1].json()
    zidane = collector.wait_for_count(3, TOPIC.format("zidane"), timeout_s=90)[-1].json()
    assert bus["model"] == "default" and zidane["model"] == "int8"
    assert all(m.json()["model"] == "default" for m in collector.messages(TOPIC.format("bus")))
    assert all(m.json()["model"] == "int8" for m in collector.messages(TOPIC.format("zidane")))
    assert "bus" in {d["label"] for d in bus["detections"]}
    assert [d["label"] for d in zidane["detections"]].count("person") >= 2
    assert app.get("/api/v1/cameras/zidane/detections").json()["model"] == "int8"

    # Events (tracking, zones and events run on each camera's own detections) name the model too.
    def event_of(camera_id):
        return next((p["after"] for p in events.payloads() if p["after"]["camera_id"] == camera_id), None)

    assert wait_until(lambda: event_of("zidane"), 90, "an event of the int8 camera")["model"] == "int8"
    assert wait_until(lambda: event_of("bus"), 90, "an event of the general camera")["model"] == "default"
    stored = wait_until(lambda: app.get("/api/v1/events?camera=zidane").json()["events"], 30, "a stored event")
    assert {e["model"] for e in stored} == {"int8"}

    models = _models(app)
    assert [(n, m["state"], m["cameras"], m["backend"]) for n, m in models.items()] == [
        ("default", "running", ["bus"], "onnxruntime"), ("int8", "running", ["zidane"], "onnxruntime")]
    metrics = app.get("/metrics").text
    assert 'edge_app_model_state{model="int8",state="running"} 1.0' in metrics
    assert 'edge_app_camera_model{camera="zidane",model="int8"} 1.0' in metrics

    # A corrupt third model for a third camera: it fails alone, the status says why.
    config = app.get("/api/v1/config").json()
    answer = app.request("PATCH", "/api/v1/config", json={
        "cameras": config["cameras"] + [{"id": "bus2", "source": rtsp.url("bus"), "fps_limit": 1, "model": "broken"}],
        "models": config["models"] + [{"name": "broken", "path": str(models_dir / "corrupt.onnx"), "engine_dir": engines}],
    })
    assert answer.status_code == 200, answer.text
    assert answer.json()["applying"] == ["models.broken"]
    wait_until(lambda: _models(app)["broken"]["state"] == "failed", 60, "the corrupt model to fail")
    broken = _models(app)["broken"]
    assert "corrupt.onnx" in broken["error"] and broken["cameras"] == ["bus2"]
    collector.clear()
    collector.wait_for_count(2, TOPIC.format("bus"), timeout_s=60)
    collector.wait_for_count(2, TOPIC.format("zidane"), timeout_s=60)
    assert {m.json()["model"] for m in collector.messages()} == {"default", "int8"}
    assert app.get("/readyz").status_code == 200, "the other models run: the appliance is ready"

    # Reloading the int8 model (a new file) leaves the first model's detector alone.
    config = app.get("/api/v1/config").json()
    config["models"][0]["path"] = str(models_dir / "int8-v2.onnx")
    answer = app.request("PATCH", "/api/v1/config", json={"models": config["models"]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["applying"] == ["models.int8"]
    wait_until(lambda: (_models(app)["int8"]["change"] or {}).get("state") == "applied", 60, "the reloaded model")
    models = _models(app)
    assert models["default"]["change"] is None, "the first model was not reloaded"
    assert models["int8"]["path"] == str(models_dir / "int8-v2.onnx")
    collector.clear()
    assert collector.wait_for_count(2, TOPIC.format("zidane"), timeout_s=60)[-1].json()["model"] == "int8"
    assert collector.wait_for_count(2, TOPIC.format("bus"), timeout_s=60)[-1].json()["model"] == "default"

    assert app.terminate() < 5.0
    assert app.proc.returncode == 0
