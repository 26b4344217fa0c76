"""A subscriber on the local broker that sees what the appliance really published."""
from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections import defaultdict
from typing import Dict, List, Optional

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

log = logging.getLogger(__name__)


def broker_reachable(host: str, port: int, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class DetectionsWatcher:
    """Counts detections messages per camera and keeps their ``latency_ms`` while ``recording``."""

    def __init__(self, host: str, port: int, topic_filter: str, client_id: str) -> None:
        self._host, self._port, self._filter = host, port, topic_filter
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        self._counts: Dict[str, int] = defaultdict(int)
        self._latencies_ms: List[float] = []
        self._delivered_ms: List[float] = []
        self.recording = False
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True)
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = lambda *args: self._subscribed.set()
        self._client.on_message = self._on_message

    def start(self, timeout_s: float = 5.0) -> bool:
        self._client.connect(self._host, self._port, keepalive=30)
        self._client.loop_start()
        return self._subscribed.wait(timeout_s)

    def stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        client.subscribe(self._filter, qos=0)

    def _on_message(self, client, userdata, message) -> None:
        received_s = time.time()
        camera_id = message.topic.split("/")[-2]
        latency_ms: Optional[float] = None
        delivered_ms: Optional[float] = None
        if self.recording:
            try:
                payload = json.loads(message.payload)
                latency_ms = float(payload["latency_ms"])
                # capture (the frame's ts) to arrival here, through the broker; same host, same clock
                delivered_ms = (received_s - float(payload["ts"])) * 1000.0
            except (ValueError, KeyError, TypeError):
                log.warning("unexpected payload on %s", message.topic)
        with self._lock:
            self._counts[camera_id] += 1
            if latency_ms is not None:
                self._latencies_ms.append(latency_ms)
            if delivered_ms is not None:
                self._delivered_ms.append(delivered_ms)

    def counts(self) -> Dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def latencies_ms(self) -> List[float]:
        with self._lock:
            return list(self._latencies_ms)

    def delivered_ms(self) -> List[float]:
        """Capture to arrival at this subscriber, of each message received while ``recording``."""
        with self._lock:
            return list(self._delivered_ms)
