"""The fleet's side of the simulated fleet: last wills seen, and a configuration rollout, timed.

One extra MQTT connection (``fleet-sim-rollout``) subscribes to ``<prefix>/+/status`` (to see the
``offline`` last wills of killed appliances arrive) and ``<prefix>/+/config/reported``. A rollout
publishes ``<prefix>/<id>/config/desired`` (retained, QoS 1) for every appliance and notes when
each report of that version arrives and whether it says ``applied`` or ``rejected``.
"""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from bench.fleet.device import bench_desired_key
from bench.fleet.mqtt_asyncio import AsyncioDriver
from edge_app.mqtt import encode
from edge_app.fleet_protocol.desired_signature import signed_desired


@dataclass
class RolloutResult:
    devices: int
    version: int
    applied: int
    rejected: int
    missing: int  # no report of this version within the timeout
    publish_s: float  # handing every desired message to the socket
    first_s: Optional[float]  # from the first publish to the first report
    p50_s: Optional[float]  # from each appliance's own desired message to its report
    p99_s: Optional[float]
    all_s: Optional[float]  # from the first publish until every appliance had reported


def _percentile(values: List[float], fraction: float) -> Optional[float]:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 3)


class RolloutProbe:
    def __init__(self, host: str, port: int, prefix: str, loop: asyncio.AbstractEventLoop,
                 username: Optional[str] = None, password: Optional[str] = None, tls_ca: Optional[str] = None) -> None:
        self.host, self.port, self.prefix, self.loop = host, port, prefix, loop
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="fleet-sim-rollout", clean_session=True)
        self.client.max_inflight_messages = 1000
        if username is not None:
            self.client.username_pw_set(username, password)
        if tls_ca is not None:
            self.client.tls_set(ca_certs=tls_ca)
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe([(f"{prefix}/+/config/reported", 1), (f"{prefix}/+/status", 1)])
        self.client.on_subscribe = lambda *args: self._subscribed.set()
        self.client.on_message = self._on_message
        self._driver = AsyncioDriver(self.client, loop)
        self._subscribed = asyncio.Event()
        self._version: Optional[int] = None
        self._epoch = uuid.uuid4().hex  # the benchmark's own fleet epoch (edge_app.fleet_agent.desired.epoch)
        self._sent_mono_s: Dict[str, float] = {}
        self._reports: Dict[str, tuple] = {}  # device -> (arrival monotonic s, status)
        self.offline_seen: Set[str] = set()  # appliances whose "offline" arrived live (not retained)

    async def connect(self, timeout_s: float = 10.0) -> None:
        self.client.connect(self.host, self.port, keepalive=30)
        await asyncio.wait_for(self._subscribed.wait(), timeout_s)

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        device = message.topic[len(self.prefix) + 1:].split("/", 1)[0]
        try:
            body = json.loads(message.payload)
        except ValueError:
            return
        if message.topic.endswith("/status"):
            if isinstance(body, dict) and body.get("state") == "offline" and not message.retain:
                self.offline_seen.add(device)
            return
        if self._version is not None and body.get("version") == self._version and device not in self._reports:
            self._reports[device] = (time.monotonic(), body.get("status"))

    async def rollout(self, device_ids: Sequence[str], patches: Dict[str, Dict[str, Any]], version: int,
                      timeout_s: float = 60.0) -> RolloutResult:
        """``patches[device_id]`` (default: ``patches["*"]``) as ``version`` to every appliance."""
        self._version, self._reports = version, {}
        started = time.monotonic()
        for index, device_id in enumerate(device_ids):
            patch = patches.get(device_id, patches["*"])
            body = encode(signed_desired(bench_desired_key(device_id), device_id, self._epoch,
                                         int(time.time() * 1000), version, patch))
            self._sent_mono_s[device_id] = time.monotonic()
            self.client.publish(f"{self.prefix}/{device_id}/config/desired", body, qos=1, retain=True)
            if index % 100 == 99:
                await asyncio.sleep(0)  # let the writer and the appliances run
        publish_s = time.monotonic() - started
        deadline = started + timeout_s
        while len(self._reports) < len(device_ids) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        waits = [arrived - self._sent_mono_s[d] for d, (arrived, _) in self._reports.items()]
        statuses = [status for _, status in self._reports.values()]
        arrivals = [arrived for arrived, _ in self._reports.values()]
        return RolloutResult(
            devices=len(device_ids), version=version, applied=statuses.count("applied"), rejected=statuses.count("rejected"),
            missing=len(device_ids) - len(self._reports), publish_s=round(publish_s, 3),
            first_s=round(min(arrivals) - started, 3) if arrivals else None,
            p50_s=_percentile(waits, 0.5), p99_s=_percentile(waits, 0.99),
            all_s=round(max(arrivals) - started, 3) if len(arrivals) == len(device_ids) else None)

    def close(self) -> None:
        self.client.disconnect()
