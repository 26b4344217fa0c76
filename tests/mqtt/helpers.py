"""Small helpers shared by the MQTT tests."""
from __future__ import annotations

import time
from typing import Callable, Dict, List

from edge_app.mqtt import detections_payload

PERSON = {"class_id": 0, "label": "person", "confidence": 0.9, "bbox": [10.0, 20.0, 110.0, 220.0]}


def detection(camera_id: str, frame_id: int, device_id: str = "dev1") -> dict:
    return detections_payload(device_id, camera_id, frame_id, time.time(), 640, 480, 4.5, [PERSON])


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def frame_ids_by_camera(payloads: List[dict]) -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = {}
    for p in payloads:
        out.setdefault(p["camera_id"], []).append(p["frame_id"])
    return out


def first_occurrences(ids: List[int]) -> List[int]:
    """At-least-once delivery may repeat a message; order is judged on first arrivals."""
    seen, out = set(), []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out
