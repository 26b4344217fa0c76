"""Live view of a camera with no frame yet: headers at once, keepalives, released when the viewer
goes; viewers of one camera do not take live view away from the others."""
from __future__ import annotations

import threading
import time
from typing import List

import cv2
import numpy as np
import pytest
import requests

from edge_app.api.live_view import KEEPALIVE_S, PLACEHOLDER_SIZE
from edge_app.detect.detections import Detections
from tests.api import raw_http
from tests.api.conftest import BASE_CONFIG, TOKEN, bus_detections
from tests.api.dashboard_page import run_dashboard

CLOSE_WAIT = "08"


def close_wait_sockets(port: int) -> int:
    """Sockets of this process's server on ``port`` whose client has gone but that are not closed."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] == CLOSE_WAIT:
                    count += 1
    return count


def read_part(sock, buffered: bytes, timeout_s: float) -> tuple:
    """(headers of the next multipart part, its JPEG, bytes left over) from a raw socket."""
    data = buffered
    sock.settimeout(timeout_s)
    while True:
        start = data.find(b"--frame\r\n")
        end = data.find(b"\r\n\r\n", start) if start >= 0 else -1
        if end >= 0:
            head = data[start:end].decode("latin-1").split("\r\n")[1:]
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)}
            length = int(headers["content-length"])
            if len(data) >= end + 4 + length:
                return headers, data[end + 4:end + 4 + length], data[end + 4 + length:]
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the live view ended")
        # The body is chunked: drop chunk-size lines crudely by keeping everything; JPEG parts
        # are found by their own headers and Content-Length, which chunk framing cannot fake.
        data += chunk


def open_raw_view(url: str, camera_id: str):
    sock = raw_http.connect(url)
    host, port = raw_http.address(url)
    sock.sendall(f"GET /api/v1/cameras/{camera_id}/stream.mjpg HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode())
    return sock


def test_a_frameless_camera_gets_headers_and_a_placeholder_at_once_then_keepalives(api):
    started = time.monotonic()
    with open_raw_view(api.url, "back") as sock:
        head = raw_http.read_head(sock)
        assert head.status == 200 and head.headers["content-type"].startswith("multipart/x-mixed-replace")
        headers, jpeg, rest = read_part(sock, head.body, timeout_s=2)
        assert time.monotonic() - started < 1.0
        assert "x-frame-id" not in headers
        image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        assert image.shape[:2] == (PLACEHOLDER_SIZE[1], PLACEHOLDER_SIZE[0])
        before = time.monotonic()
        read_part(sock, rest, timeout_s=KEEPALIVE_S + 2)
        assert time.monotonic() - before < KEEPALIVE_S + 1.5


def test_the_first_frame_replaces_the_placeholder(api, bus_image):
    with open_raw_view(api.url, "back") as sock:
        head = raw_http.read_head(sock)
        headers, _, rest = read_part(sock, head.body, timeout_s=2)
        assert "x-frame-id" not in headers
        api.service.publish("back", bus_image, bus_detections())
        headers, jpeg, _ = read_part(sock, rest, timeout_s=3)
        assert headers["x-frame-id"] == "1"
        assert cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR).shape == bus_image.shape


def test_viewers_that_leave_a_frameless_camera_are_released(api):
    port = api.server.port
    release_s = 2 * KEEPALIVE_S + 3  # the second write after the viewer left fails at the latest
    for _round in range(2):  # the second round gets only the slots the first one gave back
        deadline = time.monotonic() + release_s
        sockets = []
        while len(sockets) < 8:
            sock = open_raw_view(api.url, "back")
            status = raw_http.read_head(sock).status
            if status == 200:
                sockets.append(sock)
                continue
            sock.close()
            assert status == 503 and time.monotonic() < deadline, "the slots of departed viewers were not released"
            time.sleep(0.2)
        for sock in sockets:
            sock.close()
        deadline = time.monotonic() + release_s
        while close_wait_sockets(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert close_wait_sockets(port) == 0
    assert requests.get(api.url + "/healthz", timeout=5).status_code == 200


def test_eight_viewers_of_a_frameless_camera_leave_live_view_to_the_others(api):
    viewers: List[requests.Response] = []
    try:
        for _ in range(8):
            viewers.append(requests.get(api.url + "/api/v1/cameras/back/stream.mjpg", stream=True, timeout=3))
            assert viewers[-1].status_code == 200
        with requests.get(api.url + "/api/v1/cameras/front/stream.mjpg", stream=True, timeout=3) as other:
            assert other.status_code == 200
    finally:
        for viewer in viewers:
            viewer.close()


def test_live_views_are_bounded_per_camera_and_in_total(make_api):
    api = make_api(max_live_streams=3, max_live_streams_per_camera=2)
    viewers = [api.get("/api/v1/cameras/back/stream.mjpg", stream=True, timeout=3) for _ in range(2)]
    try:
        assert [v.status_code for v in viewers] == [200, 200]
        third = api.get("/api/v1/cameras/back/stream.mjpg", stream=True, timeout=3)
        assert third.status_code == 503 and "camera 'back'" in third.json()["error"]
        viewers.append(api.get("/api/v1/cameras/front/stream.mjpg", stream=True, timeout=3))
        assert viewers[-1].status_code == 200
        total = api.get("/api/v1/cameras/front/stream.mjpg", stream=True, timeout=3)
        assert total.status_code == 503 and "at most 3" in total.json()["error"]
    finally:
        for viewer in viewers:
            viewer.close()


@pytest.mark.parametrize("camera_id", ["front", "back"])
def test_every_live_view_part_is_a_jpeg(api, camera_id):
    with open_raw_view(api.url, camera_id) as sock:
        head = raw_http.read_head(sock)
        _, jpeg, _ = read_part(sock, head.body, timeout_s=3)
        assert cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR) is not None


def test_the_dashboard_fetches_frames_only_when_asked_for_a_camera_with_frames(api):
    api.service.camera_errors["back"] = "cannot connect to rtsp://10.0.0.9:554/main: connection refused"
    steps = run_dashboard(api, "live_view")
    assert steps["after_load"] == {"src": None, "snapshot_fetches": 0}  # no frames just for opening the page
    frameless = steps["after_picking_a_camera_without_frames"]
    assert frameless["src"] is None and frameless["snapshot_fetches"] == 0
    # Not a black box: the camera's state and its last error say why there is no picture.
    assert "back has not produced a frame yet" in frameless["note"]
    assert "State: connecting" in frameless["note"] and "connection refused" in frameless["note"]
    live = steps["after_picking_a_camera_with_frames"]
    assert live["src"].startswith("blob:") and live["note"] is None
    assert live["picture_frame"] == live["table_frame"] == "1" and live["table_rows"] == 5
    assert steps["fetches_while_hidden"] == 0
    assert steps["counts_fetches_while_hidden"] == 0 and steps["status_fetches"] >= 3  # polling went on
    assert steps["fetches_after_showing_again"] > 0
    assert steps["after_showing_the_page_again"]["picture_frame"] == "1"
    # the plain picture: the page draws the boxes itself, their labels placed so none hides another
    assert "api/v1/cameras/front/snapshot.jpg?annotate=0" in steps["requested"]


def test_the_dashboard_shows_the_only_camera_without_a_click(make_api):
    one_camera = make_api({"cameras": [BASE_CONFIG["cameras"][0]]})
    loaded = run_dashboard(one_camera, "single_camera")["after_load"]
    assert loaded["name"] == "front" and loaded["src"].startswith("blob:")
    assert loaded["picture_frame"] == loaded["table_frame"] == "1" and loaded["table_rows"] == 5


def test_the_dashboard_viewer_sends_the_token_in_a_header_never_in_a_url(secured_api):
    steps = run_dashboard(secured_api, "live_view", TOKEN)
    live = steps["after_picking_a_camera_with_frames"]
    assert live["src"].startswith("blob:") and live["picture_frame"] == live["table_frame"] == "1"
    assert not [path for path in steps["requested"] if "token" in path]


def test_the_dashboard_badge_is_online_only_while_mqtt_is_connected(make_api):
    connected = make_api()
    assert run_dashboard(connected, "badge")["link"] == {"text": "online", "className": "pill ok"}
    disconnected = make_api()
    disconnected.service.mqtt_connected = False
    assert run_dashboard(disconnected, "badge")["link"] == {"text": "MQTT disconnected", "className": "pill warn"}


def test_the_dashboard_table_and_picture_show_the_same_frame_while_frames_keep_coming(api, bus_image):
    # Frames arrive faster than the page polls, so a new one often lands between the snapshot
    # and the detections request; the table must still be that of the picture, or say it is not.
    stop = threading.Event()

    def publish() -> None:
        count = 0
        while not stop.wait(0.02):
            count += 1
            bus = bus_detections()
            keep = 1 + count % 5  # a different number of rows per frame, so a mixed pair would show
            api.service.publish("front", bus_image, Detections(xyxy=bus.xyxy[:keep], confidence=bus.confidence[:keep],
                                                               class_id=bus.class_id[:keep], labels=bus.labels))

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    try:
        views = run_dashboard(api, "same_frame")["views"]
    finally:
        stop.set()
        publisher.join(timeout=5)
    shown = [view for view in views if view["picture_frame"]]
    assert len({view["picture_frame"] for view in shown}) >= 3, "the live picture did not follow the frames"
    assert any(view["picture_frame"] == view["table_frame"] for view in shown)
    for view in shown:
        if view["picture_frame"] != view["table_frame"]:
            assert f"the picture shows frame {view['picture_frame']}" in view["meta"], view
        else:
            frame_id = int(view["picture_frame"])
            assert view["table_rows"] == (5 if frame_id == 1 else 1 + (frame_id - 1) % 5), view
