"""Cameras, snapshots, detections and the MJPEG live view over real HTTP."""
import contextlib
import threading
import time

import cv2
import numpy as np
import pytest

from tests.api.conftest import CAMERA_PASSWORD, bus_detections


def decode(jpeg: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None, "not a JPEG"
    return image


def read_parts(response, boundary: bytes, n_parts: int, timeout_s: float = 10.0):
    """The first ``n_parts`` JPEG payloads of a multipart/x-mixed-replace body."""
    buffer, parts = b"", []
    deadline = time.monotonic() + timeout_s
    for chunk in response.iter_content(chunk_size=8192):
        buffer += chunk
        while True:
            start = buffer.find(b"--" + boundary + b"\r\n")
            head_end = buffer.find(b"\r\n\r\n", start)
            if start < 0 or head_end < 0:
                break
            headers = dict(
                line.split(": ", 1) for line in buffer[start:head_end].decode("ascii").split("\r\n")[1:]
            )
            length = int(headers["Content-Length"])
            body_start = head_end + 4
            if len(buffer) < body_start + length + 2:
                break
            parts.append((headers, buffer[body_start:body_start + length]))
            buffer = buffer[body_start + length + 2:]
        if len(parts) >= n_parts or time.monotonic() > deadline:
            break
    return parts


@contextlib.contextmanager
def feeding(api, image, interval_s=0.05):
    """Publish ``image`` to camera "front" every ``interval_s``, like a live camera."""
    stop = threading.Event()

    def feed():
        while not stop.wait(interval_s):
            api.service.publish("front", image, bus_detections())

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield
    finally:
        stop.set()
        feeder.join()


def test_cameras_lists_every_camera_with_masked_credentials(api):
    response = api.get("/api/v1/cameras")
    assert response.status_code == 200
    cameras = response.json()
    assert [c["id"] for c in cameras] == ["front", "back"]
    assert cameras[0]["source"] == "rtsp://admin:***@10.0.0.5:554/stream1"
    assert CAMERA_PASSWORD not in response.text
    for camera in cameras:
        assert set(camera) >= {"id", "source", "state", "fps"}


def test_one_camera(api):
    response = api.get("/api/v1/cameras/front")
    assert response.status_code == 200 and response.json()["id"] == "front"


def test_snapshot_is_a_jpeg_of_the_source_size(api, bus_image):
    response = api.get("/api/v1/cameras/front/snapshot.jpg")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "image/jpeg"
    assert response.headers["X-Frame-Id"] == "1"
    assert decode(response.content).shape == bus_image.shape


def test_annotation_draws_on_the_frame_and_can_be_turned_off(api, bus_image):
    plain = decode(api.get("/api/v1/cameras/front/snapshot.jpg", params={"annotate": 0, "quality": 95}).content)
    drawn = decode(api.get("/api/v1/cameras/front/snapshot.jpg", params={"annotate": 1, "quality": 95}).content)
    assert cv2.PSNR(plain, bus_image) > 30  # a faithful copy of the source
    changed = np.abs(plain.astype(np.int16) - drawn.astype(np.int16)).max(axis=2) > 60
    assert changed.mean() > 0.005
    # The bus box's top edge (y = 231) is drawn; far from any box nothing changes.
    assert changed[229:234, 100:700].mean() > 0.5
    assert not changed[5:60, 300:500].any()


def test_snapshot_annotation_follows_the_configured_default(api):
    default = api.get("/api/v1/cameras/front/snapshot.jpg").content
    assert api.request("PATCH", "/api/v1/config", json={"snapshots": {"annotate": False}}).status_code == 200
    assert api.get("/api/v1/cameras/front/snapshot.jpg").content == api.get("/api/v1/cameras/front/snapshot.jpg", params={"annotate": 0}).content
    assert default == api.get("/api/v1/cameras/front/snapshot.jpg", params={"annotate": 1}).content


def test_quality_changes_the_size(api):
    sizes = [len(api.get("/api/v1/cameras/front/snapshot.jpg", params={"quality": q}).content) for q in (10, 50, 95)]
    assert sizes[0] < sizes[1] < sizes[2]


@pytest.mark.parametrize(
    "params",
    [{"quality": 0}, {"quality": 101}, {"quality": "high"}, {"quality": "85.5"}, {"annotate": 2}, {"annotate": "maybe"},
     # docs/rest-api.md: annotate=0|1 and an integer quality, as the OpenAPI document says; nothing else is guessed at.
     {"annotate": "true"}, {"annotate": "yes"}, {"annotate": "on"}, {"annotate": "OFF"},
     {"quality": "\uff15\uff10"}, {"quality": "1_0"}],
)
def test_bad_snapshot_parameters_are_400(api, params):
    response = api.get("/api/v1/cameras/front/snapshot.jpg", params=params)
    assert response.status_code == 400
    assert list(params)[0] in response.json()["error"]


@pytest.mark.parametrize("path", ["snapshot.jpg", "detections"])
def test_camera_without_a_frame_yet_is_503(api, path):
    response = api.get(f"/api/v1/cameras/back/{path}")
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert response.json()["error"]


def test_detections_is_the_latest_message(api, bus_image):
    response = api.get("/api/v1/cameras/front/detections")
    assert response.status_code == 200
    message = response.json()
    assert message["camera_id"] == "front" and message["device_id"] == "edge-test" and message["frame_id"] == 1
    assert (message["width"], message["height"]) == (bus_image.shape[1], bus_image.shape[0])
    assert message["detections"] == bus_detections().to_dicts()
    assert [d["label"] for d in message["detections"]] == ["bus", "person", "person", "person", "person"]


def test_stream_delivers_successive_jpeg_frames(api, bus_image):
    with feeding(api, bus_image):
        with api.get("/api/v1/cameras/front/stream.mjpg", params={"fps": 30}, stream=True) as response:
            assert response.status_code == 200
            content_type = response.headers["Content-Type"]
            assert content_type.startswith("multipart/x-mixed-replace")
            boundary = content_type.split("boundary=")[1].encode()
            parts = read_parts(response, boundary, 3)
    assert len(parts) >= 3
    frame_ids = [int(headers["X-Frame-Id"]) for headers, _ in parts]
    assert frame_ids == sorted(frame_ids) and len(set(frame_ids)) == len(frame_ids)
    for headers, jpeg in parts:
        assert headers["Content-Type"] == "image/jpeg"
        assert decode(jpeg).shape == bus_image.shape


def test_a_quiet_camera_still_gets_its_frame_and_keepalives(api, bus_image):
    with api.get("/api/v1/cameras/front/stream.mjpg", stream=True) as response:
        parts = read_parts(response, b"frame", 1, timeout_s=5)
    assert len(parts) == 1 and decode(parts[0][1]).shape == bus_image.shape


def test_live_views_are_bounded_and_a_closed_one_frees_its_slot(make_api, bus_image):
    api = make_api(max_live_streams=1)
    with feeding(api, bus_image):
        check_one_live_view_at_a_time(api)


def check_one_live_view_at_a_time(api):
    first = api.get("/api/v1/cameras/front/stream.mjpg", stream=True)
    assert first.status_code == 200
    second = api.get("/api/v1/cameras/front/stream.mjpg", stream=True)
    assert second.status_code == 503 and "live views" in second.json()["error"]
    first.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with api.get("/api/v1/cameras/front/stream.mjpg", stream=True) as third:
            if third.status_code == 200:
                break
        time.sleep(0.2)
    else:
        pytest.fail("the slot of the closed live view was never freed")
    # The rest of the API is unaffected throughout.
    assert api.get("/api/v1/status").status_code == 200


def test_stop_ends_open_live_views_promptly(api):
    response = api.get("/api/v1/cameras/front/stream.mjpg", stream=True)
    assert response.status_code == 200
    started = time.monotonic()
    api.server.stop(timeout_s=3)
    assert time.monotonic() - started < 3
    body = b"".join(response.iter_content(chunk_size=65536))
    assert body.rstrip().endswith(b"--frame--")


def test_nv12_frames_are_converted_once_and_only_for_viewers(make_api, bus_image):
    """A hardware decoder's NV12 frame: converted to BGR when a snapshot is asked for, once for
    all viewers, and the snapshot shows the same picture as OpenCV's conversion."""
    from edge_app.detect.nv12_reference import bgr_to_nv12
    from edge_app.capture.gpu_image import HostNv12Image

    nv12 = bgr_to_nv12(bus_image)
    image = HostNv12Image(nv12)
    running = make_api(publish=False)
    running.service.publish("front", image, bus_detections())
    assert image.conversions == 0
    plain = decode(running.get("/api/v1/cameras/front/snapshot.jpg", params={"annotate": 0, "quality": 95}).content)
    drawn = decode(running.get("/api/v1/cameras/front/snapshot.jpg", params={"annotate": 1, "quality": 95}).content)
    assert image.conversions == 1
    expected = cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12)
    assert plain.shape == drawn.shape == expected.shape
    assert np.abs(plain.astype(int) - expected).mean() < 2.0  # JPEG at quality 95
    assert np.abs(drawn.astype(int) - plain).max() > 100  # boxes drawn on the converted frame
