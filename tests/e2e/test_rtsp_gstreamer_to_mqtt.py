"""End to end with ``decoder: gstreamer``: the RTSP test server -> ``edge-app run`` decoding with
GStreamer (software decoders here, nvv4l2decoder on a Jetson) -> YOLOv8n -> a real Mosquitto."""
import pytest

from testkit.waiting import wait_until
from tests.support.gst import require_gi

pytestmark = pytest.mark.slow


def test_gstreamer_decoded_rtsp_camera_publishes_detections_and_reconnects(
    rtsp_server_factory, bus_clip, mosquitto_broker, mqtt_collector, appliance_factory, model_path
):
    require_gi()
    rtsp = rtsp_server_factory({"bus": bus_clip})
    collector = mqtt_collector(mosquitto_broker, "edge_app/e2e/#")
    app = appliance_factory([{"id": "cam1", "source": rtsp.url("bus"), "decoder": "gstreamer"}], model_path,
                            mosquitto_broker)

    detections = collector.wait_for_message("edge_app/e2e/cameras/cam1/detections", timeout_s=60).json()
    assert (detections["width"], detections["height"]) == (810, 1080)
    labels = [d["label"] for d in detections["detections"]]
    assert labels.count("person") >= 3 and "bus" in labels, labels
    assert "decoder gstreamer (configured: gstreamer)" in app.log_path.read_text(errors="replace")

    rtsp.stop()
    wait_until(lambda: app.camera_state("cam1") == "reconnecting", 30, "camera state reconnecting")
    rtsp.start()
    wait_until(lambda: app.camera_state("cam1") == "streaming", 60, "camera state streaming again")
    collector.clear()
    collector.wait_for_message("edge_app/e2e/cameras/cam1/detections", timeout_s=30)
    assert app.get("/api/v1/cameras").json()[0]["reconnects"] >= 1

    assert app.terminate() < 5.0
    assert app.proc.returncode == 0
