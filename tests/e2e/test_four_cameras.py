"""Four real RTSP streams batched through one model: each camera's detections are its own.

The four clips differ (bus, zidane, and both mirrored left-right), so a frame credited to the
wrong camera in a batch shows up as the wrong frame size, the wrong labels or boxes on the
wrong side.
"""
import cv2
import numpy as np
import pytest

from edge_app.config.schema import ModelConfig
from edge_app.detect.factory import create_detector
from testkit.waiting import wait_until
from tests.support.media import make_clip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def four_clips(tmp_path_factory, bus_jpg, zidane_jpg):
    folder = tmp_path_factory.mktemp("four")
    clips = {}
    for name, source in (("bus", bus_jpg), ("zidane", zidane_jpg)):
        image = cv2.imread(str(source))
        for suffix, variant in (("", image), ("_mirror", cv2.flip(image, 1))):
            still = folder / f"{name}{suffix}.png"
            cv2.imwrite(str(still), variant)
            clips[f"{name}{suffix}"] = (still, make_clip([still], folder / f"{name}{suffix}.mp4"))
    return clips


def _main_box(detections, label):
    """The most confident box of ``label``, as xyxy."""
    best = max((d for d in detections if d["label"] == label), key=lambda d: d["confidence"])
    return np.array(best["bbox"])


def test_four_rtsp_cameras_keep_their_own_detections(
    four_clips, rtsp_server_factory, mosquitto_broker, mqtt_collector, appliance_factory, model_path
):
    detector = create_detector(ModelConfig(path=str(model_path), input_size=None))
    expected = {}
    for name, (still, _clip) in four_clips.items():
        image = cv2.imread(str(still))
        dets = detector.detect([image])[0].to_dicts()
        label = "bus" if name.startswith("bus") else "person"
        expected[name] = {"size": (image.shape[1], image.shape[0]), "label": label, "box": _main_box(dets, label),
                          "has_bus": any(d["label"] == "bus" for d in dets)}

    rtsp = rtsp_server_factory({name: clip for name, (_still, clip) in four_clips.items()})
    collector = mqtt_collector(mosquitto_broker, "edge_app/e2e/cameras/+/detections")
    cameras = [{"id": name, "source": rtsp.url(name)} for name in four_clips]
    app = appliance_factory(cameras, model_path, mosquitto_broker, model={"max_batch": 4, "batch_timeout_ms": 20, "input_size": None})

    def every_camera_has(count):
        per_cam = {}
        for m in collector.messages():
            per_cam.setdefault(m.json()["camera_id"], []).append(m.json())
        return per_cam if all(len(per_cam.get(name, [])) >= count for name in four_clips) else None

    per_cam = wait_until(lambda: every_camera_has(5), 120, "5 detections from every camera")
    for name, payloads in per_cam.items():
        want = expected[name]
        for payload in payloads:
            assert (payload["width"], payload["height"]) == want["size"], name
            labels = {d["label"] for d in payload["detections"]}
            assert want["label"] in labels, (name, labels)
            assert ("bus" in labels) == want["has_bus"], (name, labels)
            # H.264 changes pixels a little, never enough to move a box by 5 % of the frame.
            box = _main_box(payload["detections"], want["label"])
            assert np.abs(box - want["box"]).max() < 0.05 * max(want["size"]), (name, box, want["box"])

    status = app.get("/api/v1/status").json()
    assert status["model"]["max_batch"] == 4
    assert all(cam["state"] == "streaming" for cam in status["cameras"])
    assert app.terminate() < 5.0
