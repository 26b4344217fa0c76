"""One simulated appliance of ``bench.fleet sim``: its own MQTT connection, the real topics and payloads.

Every payload comes from the appliance's own builders (``edge_app.mqtt.payloads``,
``edge_app.events.model``, ``edge_app.fleet_agent.desired.versions``), every topic from ``edge_app.mqtt.topics``, and
``R/config/desired`` is handled by the appliance's own ``FleetAgent.handle`` and ``ConfigChanges``
(schema, secrets and "What the API may change"; only the checks against this machine's model
files are left out, as a simulated appliance has none). So a simulated appliance differs from a
real one only in where its numbers come from.

Remote configuration is on and signed, as a real fleet on a shared broker should run it: each
simulated appliance's ``fleet.desired_key`` is :func:`bench_desired_key` of its id, and whoever
plays the fleet (``bench.fleet.rollout``, the fleet service of ``bench.fleet.server``) signs with
it. A simulated appliance starts with nothing saved, so it skips retained desired messages (an
earlier run's) and acts on those published while it is connected.

MQTT: paho's client driven by the asyncio loop (``bench.fleet.mqtt_asyncio``), one connection per
appliance, all in one thread. ``kill()`` closes
the socket without a DISCONNECT, so the broker publishes the appliance's last will.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from bench.fleet.mqtt_asyncio import AsyncioDriver
from edge_app import __version__
from edge_app.config import AppConfig, parse_config
from edge_app.config.profile_schedule import ProfileReport, report_of
from edge_app.config.schema_fleet import MIN_DESIRED_KEY_CHARS
from edge_app.config_change.changes import ChangeRules, ConfigChanges
from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.fleet_agent.agent import FleetAgent
from edge_app.fleet_agent.desired.epoch import EpochState
from edge_app.fleet_agent.desired.versions import ConfigReport
from edge_app.mqtt import Topics, payloads
from edge_app.mqtt.topic_docs import TOPIC_DOCS
from edge_app.review.feed import ReviewFeed
from edge_app.review.model import AlertRule
from edge_app.reporting.protocol import (ApplyResult, CameraReport, LatencyReport, ModelReport, ModelStatusReport,
                                         MqttReport, PipelineReport, StatusReport)

log = logging.getLogger(__name__)

LABELS = ("person", "car", "dog")
#: stats go out with mqtt.qos (default 1), like everything else of the contract
STATS_QOS = 1


@dataclass(frozen=True)
class DeviceSettings:
    """What every simulated appliance of a run shares."""

    host: str
    port: int
    prefix: str
    cameras: int = 4
    stats_interval_s: float = 10.0
    event_period_s: float = 60.0  # one event (new, update, end) per camera per period
    username: Optional[str] = None  # "{device_id}" is replaced by the device's id
    password: Optional[str] = None
    keepalive_s: int = 30
    tls_ca: Optional[str] = None  # CA file: connect with TLS and check the broker against it
    health_interval_s: float = 30.0  # R/health, as health.publish_s; 0: none


@dataclass
class DeviceCounters:
    sent: int = 0
    sent_bytes: int = 0
    acked: int = 0
    desired_handled: int = 0
    desired_s: float = 0.0  # time spent acting on desired messages (validation included)
    connects: int = 0
    errors: List[str] = field(default_factory=list)


class _MemoryVersionStore:
    """``DesiredVersionStore``'s interface, in memory: a simulated appliance has no config folder."""

    path = Path("<memory>")

    def __init__(self) -> None:
        self.saved: Optional[Tuple[int, ConfigReport, EpochState]] = None

    def load(self) -> Tuple[int, Optional[ConfigReport], EpochState]:
        return (0, None, EpochState()) if self.saved is None else self.saved

    def save(self, version: int, report: ConfigReport, epochs: EpochState = EpochState()) -> None:
        self.saved = (version, report, epochs)


class _SimulatedService:
    """What ``ConfigChanges`` is given of an appliance: the running configuration, and keeping a new one."""

    def __init__(self, config: AppConfig) -> None:
        self.config = config

    def current_config(self) -> AppConfig:
        return self.config

    def apply_config(self, new_config: AppConfig) -> ApplyResult:
        self.config = new_config
        return ApplyResult(new_config)


def _no_machine_checks(config: AppConfig, previous: Optional[AppConfig] = None) -> list:
    return []


def bench_desired_key(device_id: str) -> str:
    """The desired-configuration key of a simulated appliance: known to the bench, never for a real device."""
    return f"bench-desired-key-{device_id}".ljust(MIN_DESIRED_KEY_CHARS, "0")


def device_config(device_id: str, settings: DeviceSettings) -> AppConfig:
    """A valid configuration of the shape a four-camera appliance runs."""
    cameras = [{"id": f"cam{i + 1}", "source": f"rtsp://10.0.{i}.10:554/stream1"} for i in range(settings.cameras)]
    return parse_config({"device_id": device_id, "cameras": cameras, "model": {"path": "engines/yolov8n.onnx"},
                         "mqtt": {"host": settings.host, "port": settings.port, "topic_prefix": settings.prefix},
                         "fleet": {"remote_config": True, "desired_key": bench_desired_key(device_id)}})


class SimulatedAppliance:
    """One appliance: connect, birth, camera states, stats, events and counts, desired -> reported."""

    def __init__(self, device_id: str, settings: DeviceSettings, loop: asyncio.AbstractEventLoop, seed: int = 0) -> None:
        self.device_id = device_id
        self.settings = settings
        self.topics = Topics(settings.prefix, device_id)
        self.counters = DeviceCounters()
        self.killed = False
        self.connected = False
        self._loop = loop
        self._random = random.Random(seed)
        self._camera_ids = [f"cam{i + 1}" for i in range(settings.cameras)]
        self._service = _SimulatedService(device_config(device_id, settings))
        changes = ConfigChanges(self._service.current_config, self._service.apply_config,
                                ChangeRules(runtime_check=_no_machine_checks))
        self.agent = FleetAgent(changes, _MemoryVersionStore(), self._publish_reported)  # type: ignore[arg-type]
        self._tasks: List[asyncio.Task] = []
        self._started_mono_s = time.monotonic()
        self._frames = 0
        self._track_id = 0
        # Review items as the real appliance makes them (R/reviews), with its unreviewed alert counts.
        config = self._service.current_config
        self._reviews = ReviewFeed(lambda: config().review.gap_s, lambda cid: AlertRule.of(config().alert_rules(cid)))
        self._unreviewed_alerts: Dict[str, int] = {}
        self._closing = False
        self.client = self._make_client()

    # -- MQTT connection, driven by the asyncio loop --------------------------------------------------
    def _make_client(self) -> mqtt.Client:
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"edge-app-{self.device_id}", clean_session=True)
        client.max_inflight_messages = 100
        client.max_queued_messages = 10000
        if self.settings.username is not None:
            client.username_pw_set(self.settings.username.format(device_id=self.device_id),
                                   None if self.settings.password is None else self.settings.password.format(device_id=self.device_id))
        if self.settings.tls_ca is not None:
            client.tls_set(ca_certs=self.settings.tls_ca)
        offline = payloads.status_payload("offline", self.device_id, __version__)
        client.will_set(self.topics.status, payloads.encode(offline), qos=1, retain=True)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_publish = self._on_publish
        self._driver = AsyncioDriver(client, self._loop)
        return client

    def connect(self) -> None:
        """Open the connection (a blocking TCP connect, short on a LAN); the rest runs on the loop."""
        try:
            self.client.connect(self.settings.host, self.settings.port, keepalive=self.settings.keepalive_s)
        except OSError as err:
            self.counters.errors.append(f"connect: {err}")
            self._loop.call_later(self._random.uniform(1.0, 5.0), self._reconnect)

    def _reconnect(self) -> None:
        if self.killed:
            return
        try:
            self.client.reconnect()
        except OSError as err:
            self.counters.errors.append(f"reconnect: {err}")
            self._loop.call_later(self._random.uniform(1.0, 5.0), self._reconnect)

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        if reason_code.is_failure:
            self.counters.errors.append(f"refused: {reason_code}")
            return
        self.connected = True
        self.counters.connects += 1
        self._publish(self.topics.status, payloads.status_payload("online", self.device_id, __version__), retain=True)
        for camera_id in self._camera_ids:
            self._publish(self.topics.camera_state(camera_id), payloads.camera_state_payload("streaming"), retain=True)
            self._publish_raw(self.topics.camera_detect_state(camera_id), payloads.detect_state_payload(True), retain=True)
            # Motion gating's retained state, as an appliance with a camera whose scene moves sends it.
            self._publish_raw(self.topics.camera_motion(camera_id), payloads.motion_payload(True), retain=True)
            self._publish(self.topics.camera_review_alerts(camera_id),
                          payloads.review_alerts_payload(self._unreviewed_alerts.get(camera_id, 0)), retain=True)
        # The active profile (none here), retained like the real appliance's R/profile.
        self._publish(self.topics.profile, self._profile_report().to_dict(), retain=True)
        client.subscribe(self.topics.config_desired, qos=1)
        if not self._tasks:
            self._tasks = [self._loop.create_task(self._stats_loop())]
            self._tasks += [self._loop.create_task(self._camera_loop(cid)) for cid in self._camera_ids]
            if self.settings.health_interval_s > 0:
                self._tasks.append(self._loop.create_task(self._health_loop()))

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        self.connected = False
        if not self.killed and not self._closing:
            self._loop.call_later(self._random.uniform(1.0, 5.0), self._reconnect)

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason_code: Any, properties: Any) -> None:
        self.counters.acked += 1

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        if message.topic == self.topics.config_desired and message.payload and not message.retain:
            # The real agent's handling, synchronously on the loop: a few milliseconds at most.
            started = time.perf_counter()
            if self.agent.handle(bytes(message.payload)) is not None:
                self.counters.desired_handled += 1
            self.counters.desired_s += time.perf_counter() - started

    # -- publishing ---------------------------------------------------------------------------------
    def _publish_raw(self, topic: str, body: bytes, retain: bool = False, qos: int = 1) -> None:
        if self.killed or not self.connected:
            return
        info = self.client.publish(topic, body, qos=qos, retain=retain)
        if info.rc == mqtt.MQTT_ERR_SUCCESS:
            self.counters.sent += 1
            self.counters.sent_bytes += len(body)

    def _publish(self, topic: str, body: Dict[str, Any], retain: bool = False, qos: int = 1) -> None:
        self._publish_raw(topic, payloads.encode(body), retain, qos)

    def _publish_reported(self, body: Dict[str, Any]) -> bool:
        self._publish(self.topics.config_reported, body, retain=True)
        return True

    # -- what an appliance sends on its own -----------------------------------------------------------
    def status_report(self) -> StatusReport:
        """A StatusReport like the real appliance's, with plausible figures for four streaming cameras."""
        cameras = [CameraReport(cid, f"rtsp://10.0.{i}.10:554/stream1", True, "streaming", 10.0, 5.0,
                                self._frames, self._frames // 2, self._frames // 2, 0, None)
                   for i, cid in enumerate(self._camera_ids)]
        pipeline = PipelineReport(20.0, LatencyReport(45.0, 90.0), {"infer": 12.0}, 0, False, None, 0.1)
        mqtt_report = MqttReport(self.connected, self.counters.acked, 0, 0)
        model = ModelStatusReport("default", "running", "tensorrt", "engines/yolov8n.onnx", [640, 640], "int8", 4,
                                  list(self._camera_ids), 5.0, 20.0, LatencyReport(45.0, 90.0))
        return StatusReport(self.device_id, __version__, round(time.monotonic() - self._started_mono_s, 1), "tensorrt",
                            ModelReport("engines/yolov8n.onnx", [640, 640], "int8", 4), mqtt_report, cameras, pipeline,
                            models=[model], profile=self._profile_report())

    def _profile_report(self) -> ProfileReport:
        """The active profile (none here), as the real appliance reports it."""
        return report_of(self._service.current_config().profiles, datetime.now(timezone.utc))

    async def _stats_loop(self) -> None:
        await asyncio.sleep(self._random.uniform(0, self.settings.stats_interval_s))
        while not self.killed:
            self._frames += int(10 * self.settings.stats_interval_s)
            self._publish(self.topics.stats, payloads.stats_payload_for(self.status_report()), qos=STATS_QOS)
            await asyncio.sleep(self.settings.stats_interval_s)

    async def _health_loop(self) -> None:
        """Retained R/health as the appliance sends it; one appliance in ten runs hot and throttles."""
        body = json.loads(TOPIC_DOCS["health"].example())
        hot = self._random.random() < 0.1
        await asyncio.sleep(self._random.uniform(0, self.settings.health_interval_s))
        while not self.killed:
            temperature_c = round(self._random.uniform(92, 99) if hot else self._random.uniform(45, 70), 1)
            problems = ([{"kind": "hot", "subject": "board", "message": f"tj-therm at {temperature_c} °C",
                          "value": temperature_c, "limit": 85.0},
                         {"kind": "throttling", "subject": "soc", "message": "the clocks are throttled"}] if hot else [])
            body.update(ts=time.time(), problems=problems)
            body["summary"].update(temperature_c=temperature_c, throttling=hot)
            self._publish(self.topics.health, body, retain=True)
            await asyncio.sleep(self.settings.health_interval_s)

    async def _camera_loop(self, camera_id: str) -> None:
        """One event per period: new, an update (a better score) a little later, then the end."""
        period_s = self.settings.event_period_s
        await asyncio.sleep(self._random.uniform(0, period_s))
        while not self.killed:
            started = time.monotonic()
            label = self._random.choice(LABELS)
            self._track_id += 1
            now = time.time()
            box = (100.0, 120.0, 260.0, 400.0)
            event = Event(f"{now:.6f}-{camera_id}-{self._track_id}", camera_id, label, self._track_id, 0.61, 0.61,
                          box, now, now)
            self._publish_event(EventMessage(NEW, event))
            self._publish(self.topics.camera_objects(camera_id, label), payloads.count_payload(1), retain=True)
            await asyncio.sleep(min(2.0, period_s / 4))
            better = replace(event, score=0.83, top_score=0.83, frame_time=time.time())
            self._publish_event(EventMessage(UPDATE, better, event))
            await asyncio.sleep(min(3.0, period_s / 4))
            ended = replace(better, end_time=time.time(), frame_time=time.time())
            self._publish_event(EventMessage(END, ended, better))
            self._publish(self.topics.camera_objects(camera_id, label), payloads.count_payload(0), retain=True)
            await asyncio.sleep(max(0.0, period_s - (time.monotonic() - started)))

    def _publish_event(self, message: EventMessage) -> None:
        self._publish(self.topics.events, message.to_dict())
        review = self._reviews.observe(message)
        if review is None:
            return
        self._publish(self.topics.reviews, review.to_dict())
        if review.before is None and review.after.is_alert:
            camera_id = review.after.camera_id
            self._unreviewed_alerts[camera_id] = self._unreviewed_alerts.get(camera_id, 0) + 1
            self._publish(self.topics.camera_review_alerts(camera_id),
                          payloads.review_alerts_payload(self._unreviewed_alerts[camera_id]), retain=True)

    # -- ending -------------------------------------------------------------------------------------
    def kill(self) -> None:
        """Drop the connection as a power cut would: no DISCONNECT, so the broker sends the last will."""
        self.killed = True
        for task in self._tasks:
            task.cancel()
        self._driver.drop()
        self.connected = False

    def say_offline(self) -> Optional[mqtt.MQTTMessageInfo]:
        """The first half of a clean shutdown: ``offline`` published like the real appliance does.

        DISCONNECT waits for its PUBACK (see :meth:`disconnect`): a client that closes its TLS socket
        with bytes still unread makes the kernel answer with a reset, and the broker may lose the
        last PUBLISH it had not read yet."""
        if self.killed or not self.connected:
            return None
        self._closing = True
        for task in self._tasks:
            task.cancel()
        body = payloads.encode(payloads.status_payload("offline", self.device_id, __version__))
        info = self.client.publish(self.topics.status, body, qos=1, retain=True)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            return None
        self.counters.sent += 1
        self.counters.sent_bytes += len(body)
        return info

    def disconnect(self) -> None:
        """The second half of a clean shutdown."""
        if not self.killed:
            self._closing = True
            self.client.disconnect()
