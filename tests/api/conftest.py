"""Fixtures for the REST API tests: a real HTTP server on a free port in front of an
InMemoryService that serves a real photo (bus.jpg) with realistic detections."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import cv2
import numpy as np
import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.http_server.listening import request_listening_hosts
from edge_app.appliance.event_deletion import StoredEventDeletion
from edge_app.config.file import merge_patch, parse_config
from edge_app.config_change.changes import ConfigChanges
from edge_app.detect.detections import Detections
from tests.api.in_memory_service import InMemoryService, saving_change_path

TOKEN = "t0ken-for-tests"
MQTT_PASSWORD = "mqtt-pa55word"
CAMERA_PASSWORD = "cam-s3cret"
COCO_HEAD = ("person", "bicycle", "car", "motorcycle", "airplane", "bus")

BASE_CONFIG: Dict[str, Any] = {
    "device_id": "edge-test",
    "cameras": [
        {"id": "front", "source": f"rtsp://admin:{CAMERA_PASSWORD}@10.0.0.5:554/stream1"},
        {"id": "back", "source": "test://bars"},
    ],
    "model": {"path": "engines/yolov8n.onnx"},
    "mqtt": {"username": "edge", "password": MQTT_PASSWORD},
    "api": {"port": 0},
}


def bus_detections() -> Detections:
    """What YOLOv8n finds in bus.jpg: the bus and four people."""
    return Detections(
        xyxy=np.array([[17, 231, 802, 768], [48, 399, 245, 903], [670, 380, 810, 876], [221, 405, 344, 857], [0, 550, 63, 873]], np.float32),
        confidence=np.array([0.87, 0.87, 0.85, 0.83, 0.26], np.float32),
        class_id=np.array([5, 0, 0, 0, 0], np.int32),
        labels=COCO_HEAD,
    )


@dataclass
class RunningApi:
    """One app served over real HTTP, the doors behind it (read side, change path, event deletion)
    and a client session."""

    service: InMemoryService
    server: ApiServer
    config_path: Path
    changes: ConfigChanges
    deletion: StoredEventDeletion
    http: requests.Session = field(default_factory=requests.Session)

    @property
    def url(self) -> str:
        return self.server.url

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 10)
        return self.http.request(method, self.url + path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)


@pytest.fixture(scope="session")
def bus_image(bus_jpg) -> np.ndarray:
    image = cv2.imread(str(bus_jpg))
    assert image is not None, f"cannot read {bus_jpg}"
    return image


@pytest.fixture
def make_api(tmp_path, bus_image, model_path) -> Callable[..., RunningApi]:
    """Start an API; ``config_patch`` is merged into BASE_CONFIG, "front" gets the bus frame.

    The model is the real YOLOv8n: a config change is checked against it (class names, files).
    """
    started: List[RunningApi] = []

    def start(config_patch: Optional[Dict[str, Any]] = None, publish: bool = True, listen_host: str = "127.0.0.1",
              **app_kwargs: Any) -> RunningApi:
        base = merge_patch(copy.deepcopy(BASE_CONFIG), {"model": {"path": str(model_path)}})
        config = parse_config(merge_patch(base, config_patch or {}))
        config_path = tmp_path / f"config-{len(started)}.yaml"
        service = InMemoryService(config, config_path)
        # As edge_app/commands/run_appliance.py wires it: the token rule asks the server that answers where it listens.
        changes = saving_change_path(service, listening_hosts=request_listening_hosts)
        deletion = StoredEventDeletion(service.event_store)
        if publish:
            service.publish("front", bus_image, bus_detections())
        server = ApiServer(create_app(service, changes, deletion, **app_kwargs), listen_host, 0)
        server.start()
        running = RunningApi(service, server, config_path, changes, deletion)
        started.append(running)
        return running

    yield start
    for running in started:
        running.http.close()
        running.server.stop(timeout_s=5)
        running.service.close()


@pytest.fixture
def api(make_api) -> RunningApi:
    return make_api()


@pytest.fixture
def secured_api(make_api) -> RunningApi:
    return make_api({"api": {"token": TOKEN}})
