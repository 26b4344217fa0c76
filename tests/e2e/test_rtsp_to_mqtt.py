"""End to end: a real RTSP server -> ``edge-app run`` (subprocess, real YOLOv8n on ONNX Runtime)
-> a real Mosquitto -> a paho subscriber; plus the REST API of the running process."""
import time

import cv2
import numpy as np
import pytest

from testkit.waiting import wait_until

pytestmark = pytest.mark.slow

DETECTION_KEYS = {"device_id", "camera_id", "frame_id", "ts", "width", "height", "latency_ms", "model", "detections"}


def test_rtsp_camera_detections_reach_mqtt_and_survive_an_rtsp_outage(
    rtsp_server_factory, bus_clip, mosquitto_broker, mqtt_collector, appliance_factory, model_path
):
    rtsp = rtsp_server_factory({"bus": bus_clip})
    collector = mqtt_collector(mosquitto_broker, "edge_app/e2e/#")
    app = appliance_factory([{"id": "cam1", "source": rtsp.url("bus")}], model_path, mosquitto_broker, mqtt={"stats_interval_s": 1})

    detections = collector.wait_for_message("edge_app/e2e/cameras/cam1/detections", timeout_s=60).json()
    assert set(detections) == DETECTION_KEYS
    assert detections["device_id"] == "e2e" and detections["camera_id"] == "cam1"
    assert (detections["width"], detections["height"]) == (810, 1080)
    assert detections["frame_id"] >= 1 and detections["latency_ms"] >= 0
    assert abs(detections["ts"] - time.time()) < 30
    labels = [d["label"] for d in detections["detections"]]
    assert labels.count("person") >= 3 and "bus" in labels
    for det in detections["detections"]:
        # Tracking is on by default (docs/configuration.md): -1 until a box belongs to a confirmed track.
        assert set(det) == {"class_id", "label", "confidence", "bbox", "track_id"}
        assert isinstance(det["track_id"], int) and det["track_id"] >= -1
        x1, y1, x2, y2 = det["bbox"]
        assert 0 <= x1 < x2 <= 810 and 0 <= y1 < y2 <= 1080

    status = collector.wait_for_message("edge_app/e2e/status", timeout_s=5)
    assert status.json()["state"] == "online" and status.json()["device_id"] == "e2e" and "version" in status.json()
    stats = collector.wait_for(lambda msgs: [m.json() for m in msgs if m.topic == "edge_app/e2e/stats"
                                             and m.json()["cameras"]["cam1"]["state"] == "streaming" and m.json()["fps"] > 0], 15)[-1]
    assert {"fps", "latency_ms", "queue", "dropped"} <= set(stats) and stats["fps"] > 0
    states = collector.payloads("edge_app/e2e/cameras/cam1/state")
    assert any(s["state"] == "streaming" for s in states)

    # The RTSP server goes away: the camera reconnects on its own once it is back.
    rtsp.stop()
    wait_until(lambda: app.camera_state("cam1") == "reconnecting", 30, "camera state reconnecting")
    collector.wait_for(lambda msgs: any(m.topic.endswith("cam1/state") and m.json()["state"] == "reconnecting" for m in msgs), 10)
    rtsp.start()
    wait_until(lambda: app.camera_state("cam1") == "streaming", 60, "camera state streaming again")
    cams = app.get("/api/v1/cameras").json()
    assert cams[0]["reconnects"] >= 1
    collector.clear()
    collector.wait_for_message("edge_app/e2e/cameras/cam1/detections", timeout_s=30)

    # SIGTERM: clean shutdown within 5 s and a retained offline status.
    assert app.terminate() < 5.0
    assert app.proc.returncode == 0
    offline = collector.wait_for(lambda msgs: [m for m in msgs if m.topic == "edge_app/e2e/status" and m.json()["state"] == "offline"], 5)
    assert offline
    late = mqtt_collector(mosquitto_broker, "edge_app/e2e/status")
    assert late.wait_for_message("edge_app/e2e/status", timeout_s=5).json()["state"] == "offline"


def test_qos1_detections_published_while_the_broker_is_down_arrive_afterwards(
    bus_clip, mosquitto_broker, mqtt_collector, appliance_factory, model_path
):
    # A file read with realtime: false waits for the pipeline, so every frame is analysed and
    # published: frame ids are contiguous and any lost message shows as a gap.
    collector = mqtt_collector(mosquitto_broker, "edge_app/e2e/cameras/+/detections", client_id="e2e-sub", clean_session=False)
    app = appliance_factory([{"id": "file", "source": str(bus_clip), "loop": True, "realtime": False, "fps_limit": 8}],
                            model_path, mosquitto_broker, mqtt={"qos": 1, "max_queue": 10000})
    collector.wait_for_count(3, timeout_s=60)
    mosquitto_broker.stop()
    wait_until(lambda: not app.get("/api/v1/status").json()["mqtt"]["connected"], 15, "edge-app to notice the broker is gone")
    time.sleep(3)
    queued = app.get("/api/v1/status").json()["mqtt"]["queued"]
    assert queued >= 5, "frames analysed during the outage should be queued"
    mosquitto_broker.start()
    wait_until(lambda: app.get("/api/v1/status").json()["mqtt"]["connected"], 30, "edge-app to reconnect")
    wait_until(lambda: app.get("/api/v1/status").json()["mqtt"]["queued"] == 0, 30, "the queue to drain")
    last_published = max(m.json()["frame_id"] for m in collector.wait_for_count(queued + 3, timeout_s=30))
    app.terminate()
    time.sleep(1)
    frame_ids = sorted({m.json()["frame_id"] for m in collector.messages()})
    assert frame_ids == list(range(frame_ids[0], frame_ids[-1] + 1)), "a detection was lost"
    assert frame_ids[-1] >= last_published
    assert app.proc.returncode == 0


def test_rest_api_of_a_running_appliance(rtsp_server_factory, bus_clip, appliance_factory, model_path):
    rtsp = rtsp_server_factory({"bus": bus_clip})
    app = appliance_factory([{"id": "cam1", "source": rtsp.url("bus")}], model_path, None, api={"token": "s3cret"})
    wait_until(lambda: app.get("/readyz").status_code == 200, 60, "readyz")
    assert app.request("GET", "/api/v1/status", headers={"Authorization": "Bearer wrong"}).status_code == 401
    status = app.get("/api/v1/status").json()
    assert status["backend"] == "onnxruntime" and status["device_id"] == "e2e"
    assert status["cameras"][0]["id"] == "cam1"
    wait_until(lambda: app.get("/api/v1/cameras/cam1/snapshot.jpg").status_code == 200, 60, "a snapshot")
    snap = app.get("/api/v1/cameras/cam1/snapshot.jpg")
    image = cv2.imdecode(np.frombuffer(snap.content, np.uint8), cv2.IMREAD_COLOR)
    assert snap.headers["Content-Type"] == "image/jpeg" and image.shape == (1080, 810, 3)
    assert app.get("/api/v1/cameras/nope/snapshot.jpg").status_code == 404
    latest = app.get("/api/v1/cameras/cam1/detections").json()
    assert latest["camera_id"] == "cam1" and any(d["label"] == "bus" for d in latest["detections"])

    before = app.config_path.read_bytes()
    bad = app.request("PATCH", "/api/v1/config", json={"cameras": [{"id": "cam1", "source": rtsp.url("bus"), "fps_limit": -1}]})
    assert bad.status_code == 400 and bad.json()["details"][0]["loc"] == "cameras.0.fps_limit"
    assert app.config_path.read_bytes() == before

    # A live change: keep only buses; the camera keeps running, the file is rewritten.
    ok = app.request("PATCH", "/api/v1/config", json={"model": {"classes": ["bus"]}})
    assert ok.status_code == 200, ok.text
    assert ok.json()["model"]["classes"] == ["bus"] and ok.json()["restart_required"] == []
    assert "bus" in app.config_path.read_text() and app.config_path.read_bytes() != before
    def only_buses():
        payload = app.get("/api/v1/cameras/cam1/detections").json()
        labels = {d["label"] for d in payload["detections"]}
        return labels == {"bus"}
    wait_until(only_buses, 30, "detections filtered to buses")
    moved = app.request("PATCH", "/api/v1/config", json={"api": {"port": 1}})
    assert moved.status_code == 200 and moved.json()["restart_required"] == ["api.port"]
    metrics = app.get("/metrics").text
    assert "cam1" in metrics
    assert app.terminate() < 5.0
