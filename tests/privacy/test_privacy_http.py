"""Privacy masks through a real appliance and its API over HTTP: the snapshot route (plain and
annotated), the MJPEG live view and the stored event snapshot never show the masked area, and with
``privacy.detect: false`` the model does not see it either. Real model, real clip (bus.jpg)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.appliance.appliance import Appliance
from edge_app.config.file import ConfigFile, parse_config
from edge_app.config_change.changes import ChangeRules
from edge_app.events.store import EventStore
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

# The sky above the bus: no detection box or label is drawn there, so an annotated picture
# must be black in it too. Fractions of the 810 x 1080 frame.
TOP = [[0.1, 0.02], [0.9, 0.02], [0.9, 0.17], [0.1, 0.17]]
WHOLE = [[0, 0], [1, 0], [1, 1], [0, 1]]


def region(shape, polygon, shrink_px=3):
    """Pixels surely inside ``polygon`` (a rectangle here), ``shrink_px`` in from its edges."""
    height, width = shape[:2]
    (x0, y0), (x1, y1) = polygon[0], polygon[2]
    mask = np.zeros((height, width), dtype=bool)
    mask[int(y0 * height) + shrink_px:int(y1 * height) - shrink_px,
         int(x0 * width) + shrink_px:int(x1 * width) - shrink_px] = True
    return mask


def psnr(a, b):
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def decode(jpeg: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


@pytest.fixture
def running(model_path, bus_clip, tmp_path):
    started = []

    def start(privacy):
        raw = {
            "device_id": "box1",
            "cameras": [{"id": "front", "source": str(bus_clip), "loop": True, "fps_limit": 5, "privacy": privacy}],
            "model": {"path": str(model_path), "backend": "onnxruntime"},
            "mqtt": {"enabled": False},
            "events": {"dir": str(tmp_path / "events"), "min_frames": 1},
        }
        config = parse_config(raw)
        store = EventStore(tmp_path / "events")
        appliance = Appliance(config, event_store=store,
                              change_rules=ChangeRules(config_file=ConfigFile(tmp_path / "config.yaml")))
        server = ApiServer(create_app(appliance.reads, appliance.changes, appliance.event_deletion), "127.0.0.1", 0)
        server.start()
        appliance.start()
        started.append((appliance, server, store))
        return appliance, server.url

    yield start
    for appliance, server, store in started:
        appliance.stop()
        server.stop(timeout_s=5)
        store.close()


def snapshot(url, annotate):
    answer = wait_for(lambda: (lambda r: r if r.status_code == 200 else None)(
        requests.get(f"{url}/api/v1/cameras/front/snapshot.jpg?annotate={annotate}", timeout=10)), 30, "a snapshot")
    return decode(answer.content)


def test_snapshots_live_view_and_event_snapshots_are_masked(running, bus_jpg):
    _, url = running({"masks": [{"polygon": TOP}]})
    source = cv2.imread(str(bus_jpg))
    for annotate in (0, 1):
        image = snapshot(url, annotate)
        assert image.shape == source.shape
        inside = region(image.shape, TOP)
        assert image[inside].max() <= 24, f"annotate={annotate}: masked pixels left the device"
        outside = ~region(image.shape, TOP, shrink_px=-4)
        if not annotate:
            assert psnr(image[outside], source[outside]) > 30
        assert source[inside].mean() > 60  # there was something to hide

    with requests.get(f"{url}/api/v1/cameras/front/stream.mjpg?fps=5", stream=True, timeout=10) as live:
        assert live.status_code == 200
        data = b""
        for chunk in live.iter_content(65536):
            data += chunk
            start = data.find(b"\xff\xd8")
            end = data.find(b"\xff\xd9", start + 2)
            if start >= 0 and end > 0:
                break
        frame = decode(data[start:end + 2])
    assert frame[region(frame.shape, TOP)].max() <= 24

    events = wait_for(lambda: [e for e in requests.get(f"{url}/api/v1/events?camera=front", timeout=10).json()["events"]
                               if e.get("has_snapshot")] or None, 60, "an event with a snapshot")
    jpeg = requests.get(f"{url}/api/v1/events/{events[0]['id']}/snapshot.jpg", timeout=10)
    assert jpeg.status_code == 200
    thumb = decode(jpeg.content)
    assert thumb[region(thumb.shape, TOP)].max() <= 24


@pytest.mark.parametrize("detect, finds", [(True, True), (False, False)], ids=["detector sees the mask",
                                                                               "detector masked too"])
def test_privacy_detect_decides_whether_the_model_sees_the_masked_area(running, detect, finds):
    _, url = running({"masks": [{"polygon": WHOLE}], "detect": detect})
    image = snapshot(url, 0)
    assert image.max() <= 24  # the whole frame is masked on the way out either way
    payloads = [wait_for(lambda: (lambda r: r.json() if r.status_code == 200 else None)(
        requests.get(f"{url}/api/v1/cameras/front/detections", timeout=10)), 30, "detections")]
    # a few analysed frames: the bus is found in every one when the model sees it
    for _ in range(3):
        payloads.append(requests.get(f"{url}/api/v1/cameras/front/detections", timeout=10).json())
    found = any(p["detections"] for p in payloads)
    assert found is finds, payloads[-1]
