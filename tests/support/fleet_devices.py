"""A simulated appliance for the fleet tests: the topics of docs/mqtt.md over a real paho connection.

It sends what an appliance sends (retained status with a last will, camera states, stats,
events, counts) and answers ``R/config/desired`` the way docs/fleet.md says: a version is applied
once, in order, an older or repeated one ignored; a patch touching a key of ``reject_keys``
is rejected with an error naming it, as the appliance would for an invalid field.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion


class SimDevice:
    def __init__(self, host: str, port: int, prefix: str, device_id: str, *, cameras: Sequence[str] = ("cam1",),
                 keepalive_s: int = 5, reject_keys: Sequence[str] = (), version: str = "0.0-sim"):
        self.host, self.port = host, port
        self.root = f"{prefix}/{device_id}"
        self.device_id = device_id
        self.cameras = list(cameras)
        self.keepalive_s = keepalive_s
        self.reject_keys = set(reject_keys)
        self.version = version
        self.config: Dict[str, Any] = {}
        self.applied_version = 0
        self.reports: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"sim-{prefix}-{device_id}", clean_session=True)
        self._client.will_set(f"{self.root}/status", self._status("offline"), qos=1, retain=True)
        self._client.on_connect = self._on_connect
        self._client.on_message = self._on_message

    def _status(self, state: str) -> bytes:
        return json.dumps({"state": state, "device_id": self.device_id, "version": self.version, "ts": time.time()}).encode()

    def start(self, timeout_s: float = 5.0) -> "SimDevice":
        self._client.connect(self.host, self.port, keepalive=self.keepalive_s)
        self._client.loop_start()
        if not self._connected.wait(timeout_s):
            raise AssertionError(f"{self.device_id} did not connect")
        return self

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        client.subscribe(f"{self.root}/config/desired", qos=1)
        client.publish(f"{self.root}/status", self._status("online"), qos=1, retain=True)
        for camera in self.cameras:
            self.camera_state(camera, "streaming")
        self._connected.set()

    def _on_message(self, client, userdata, message) -> None:
        if not message.payload:
            return  # a deleted retained message is not a request
        desired = json.loads(message.payload)
        version, patch = desired.get("version"), desired.get("patch")
        with self._lock:
            if not isinstance(version, int) or version <= self.applied_version:
                return  # an older or repeated version is ignored
            self.applied_version = version
            bad = sorted(self.reject_keys & set(patch or {}))
            if bad:
                report = {"version": version, "status": "rejected", "errors": [{"loc": k, "msg": "invalid value"} for k in bad]}
            else:
                self.config.update(patch)
                report = {"version": version, "status": "applied", "errors": []}
            report["ts"] = time.time()
            self.reports.append(report)
        client.publish(f"{self.root}/config/reported", json.dumps(report), qos=1, retain=True)

    # -- what an appliance publishes
    def publish(self, tail: str, body: Any, retain: bool = False) -> mqtt.MQTTMessageInfo:
        return self._client.publish(f"{self.root}/{tail}", json.dumps(body), qos=1, retain=retain)

    def camera_state(self, camera: str, state: str, error: Optional[str] = None) -> None:
        self.publish(f"cameras/{camera}/state", {"state": state, "ts": time.time(), "error": error}, retain=True)

    def event(self, kind: str, event_id: str, camera: str = "cam1", label: str = "person", start_time: Optional[float] = None,
              end_time: Optional[float] = None, zones: Sequence[str] = ()) -> mqtt.MQTTMessageInfo:
        start = time.time() if start_time is None else start_time
        after = {"id": event_id, "camera_id": camera, "label": label, "track_id": 1, "score": 0.8, "top_score": 0.9,
                 "box": [1, 2, 3, 4], "frame_time": start, "start_time": start, "end_time": end_time,
                 "current_zones": list(zones), "entered_zones": list(zones), "has_snapshot": False}
        return self.publish("events", {"type": kind, "before": None, "after": after})

    def stats(self, fps: float = 10.0) -> None:
        self.publish("stats", {"fps": fps, "latency_ms": {"p50": 20, "p99": 40}, "queue": 0, "dropped": 0, "cameras": {}})

    # -- ways to go away
    def stop(self) -> None:
        """A clean shutdown: offline status, then DISCONNECT (no last will)."""
        self._client.publish(f"{self.root}/status", self._status("offline"), qos=1, retain=True).wait_for_publish(5)
        self._client.disconnect()
        self._client.loop_stop()

    def kill(self) -> None:
        """A crash: the connection drops without DISCONNECT, so the broker sends the last will."""
        self._client.loop_stop()
        sock = self._client.socket()
        if sock is not None:
            sock.close()

    def hang(self) -> None:
        """A hung device: the socket stays open but nothing is sent; the broker gives up after 1.5x keepalive."""
        self._client.loop_stop()
