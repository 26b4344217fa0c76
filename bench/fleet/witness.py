"""An independent subscriber for the fleet benchmark: what the broker delivered, to compare with the fleet.

It counts the events (device, event id) and notes which ended, and the times births (``online``),
last wills (``offline``) and configuration reports arrived, so the benchmark can say how many
events the fleet service lost and how far it lagged behind the broker: what the simulator and
the broker take is then told apart from what the fleet service adds.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Dict, Set, Tuple

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion


class FleetWitness:
    def __init__(self, host: str, port: int, prefix: str):
        self._prefix = prefix
        self._lock = threading.Lock()
        self.events: Set[Tuple[str, str]] = set()
        self.ended: Set[Tuple[str, str]] = set()
        self.offline_at: Dict[str, float] = {}  # device -> monotonic time its offline status arrived live
        self.online_at: Dict[str, float] = {}  # device -> monotonic time of its first online status
        self.reported_at: Dict[str, float] = {}  # device -> monotonic time of its latest live config report
        self.messages = 0
        self._subscribed = threading.Event()
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"fleet-witness-{prefix}")
        self._client.on_connect = lambda c, *_: c.subscribe([(f"{prefix}/+/events", 1), (f"{prefix}/+/status", 1),
                                                                      (f"{prefix}/+/config/reported", 1)])
        self._client.on_subscribe = lambda *_: self._subscribed.set()
        self._client.on_message = self._on_message
        self._host, self._port = host, port

    def start(self) -> "FleetWitness":
        self._client.connect(self._host, self._port, keepalive=30)
        self._client.loop_start()
        if not self._subscribed.wait(10):
            raise RuntimeError("the witness could not subscribe")
        return self

    def stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    def _on_message(self, client, userdata, message: mqtt.MQTTMessage) -> None:
        device = message.topic[len(self._prefix) + 1:].split("/")[0]
        body = json.loads(message.payload)
        with self._lock:
            self.messages += 1
            if message.topic.endswith("/events"):
                key = (device, body["after"]["id"])
                self.events.add(key)
                if body["type"] == "end":
                    self.ended.add(key)
            elif message.topic.endswith("/config/reported"):
                if not message.retain:
                    self.reported_at[device] = time.monotonic()
            elif body.get("state") == "online":
                self.online_at.setdefault(device, time.monotonic())
            elif not message.retain and body.get("state") == "offline":
                self.offline_at.setdefault(device, time.monotonic())

    def times(self) -> Tuple[Dict[str, float], Dict[str, float]]:
        """(first online, latest config report) per device."""
        with self._lock:
            return dict(self.online_at), dict(self.reported_at)

    def snapshot(self) -> Tuple[Set[Tuple[str, str]], Set[Tuple[str, str]], Dict[str, float]]:
        with self._lock:
            return set(self.events), set(self.ended), dict(self.offline_at)
