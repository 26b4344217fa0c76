"""What the chaos soak does to a running appliance and how it watches it.

* ``ProcessSampler``: RSS, threads and open file descriptors of the appliance's process (psutil).
* ``DetectionsWatch``: an MQTT subscriber with a persistent session (fixed client id,
  ``clean_session=False``, QoS 1) that keeps every detections message's camera, frame id and
  capture time; the broker queues for it while either side is away.
* ``slowloris``: N sockets that trickle header bytes while ``/healthz`` is timed.
* ``patch_storm``: many valid ``PATCH /api/v1/config`` changes of decode-only model settings.
* ``api_json``: one answer of the appliance's API, or None while it cannot give one.

Each burst runs with bounded timeouts so that the caller can run it on its own thread without
delaying the kill schedule.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import paho.mqtt.client as mqtt
import psutil
import requests
from paho.mqtt.enums import CallbackAPIVersion

log = logging.getLogger(__name__)


def api_json(app, path: str) -> Optional[dict]:
    """The JSON of ``app``'s 200 answer to ``GET path``; None for any other answer or a failed
    request (the appliance may be restarting, or not answering yet)."""
    try:
        response = app.get(path)
        return response.json() if response.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return None


@dataclass(frozen=True)
class ProcessSample:
    t_s: float  # since the start of the soak
    rss_mb: float
    threads: int
    fds: int  # every open descriptor: files, sockets, pipes


class ProcessSampler:
    """Samples one process; ``descriptors()`` names what each open descriptor points at."""

    def __init__(self, pid: int, started_mono_s: float) -> None:
        self.pid = pid
        self._process = psutil.Process(pid)
        self._started_mono_s = started_mono_s

    def sample(self) -> ProcessSample:
        with self._process.oneshot():
            return ProcessSample(round(time.monotonic() - self._started_mono_s, 1),
                                 round(self._process.memory_info().rss / 2**20, 1),
                                 self._process.num_threads(), self._process.num_fds())

    def steady_sample(self, count: int = 5, interval_s: float = 1.0) -> ProcessSample:
        """The sample with the fewest threads and descriptors out of ``count``: a request being
        served or a reconnect in progress holds a thread or a socket for a moment."""
        samples = []
        for index in range(count):
            if index:
                time.sleep(interval_s)
            samples.append(self.sample())
        return min(samples, key=lambda s: (s.threads + s.fds, s.t_s))

    def descriptors(self) -> List[str]:
        """What each descriptor points at (socket:[inode] kinds reduced to their type)."""
        folder = f"/proc/{self.pid}/fd"
        targets = []
        for name in os.listdir(folder):
            try:
                target = os.readlink(os.path.join(folder, name))
            except OSError:
                continue
            targets.append(target.split(":[")[0] if ":[" in target else target)
        return sorted(targets)


@dataclass(frozen=True)
class Detection:
    camera_id: str
    frame_id: int
    ts: float  # capture time, wall clock


class DetectionsWatch:
    """Keeps (camera, frame id, capture time) of every detections message, duplicates included."""

    def __init__(self, host: str, port: int, topic_filter: str, client_id: str) -> None:
        self._lock = threading.Lock()
        self._received: List[Detection] = []
        self._subscribed = threading.Event()
        self._filter = topic_filter
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False)
        self._client.reconnect_delay_set(1, 2)
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = lambda *args: self._subscribed.set()
        self._client.on_message = self._on_message
        self._host, self._port = host, port
        self.connects = 0

    def start(self, timeout_s: float = 10.0) -> None:
        self._client.connect_async(self._host, self._port, keepalive=10)
        self._client.loop_start()
        if not self._subscribed.wait(timeout_s):
            raise RuntimeError(f"could not subscribe at {self._host}:{self._port} within {timeout_s} s")

    def stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            return
        self.connects += 1
        # A resumed session keeps its subscription and its queued messages.
        if not flags.session_present:
            client.subscribe(self._filter, qos=1)

    def _on_message(self, client, userdata, message) -> None:
        try:
            body = json.loads(message.payload)
            detection = Detection(str(body["camera_id"]), int(body["frame_id"]), float(body["ts"]))
        except (ValueError, KeyError, TypeError):
            log.warning("unexpected payload on %s", message.topic)
            return
        with self._lock:
            self._received.append(detection)

    def received(self) -> List[Detection]:
        with self._lock:
            return list(self._received)

    def unique_per_camera(self) -> Dict[str, int]:
        """Distinct (frame id, capture time) per camera: a re-sent message counts once, and a
        camera restarted by a configuration change starts its frame ids again at 1."""
        seen: Dict[str, Set[Tuple[int, float]]] = {}
        for d in self.received():
            seen.setdefault(d.camera_id, set()).add((d.frame_id, d.ts))
        return {camera_id: len(keys) for camera_id, keys in seen.items()}

    def first_capture_after(self, camera_id: str, after_wall_s: float) -> Optional[float]:
        """Capture time of the camera's first analysed frame taken after ``after_wall_s``."""
        times = [d.ts for d in self.received() if d.camera_id == camera_id and d.ts >= after_wall_s]
        return min(times) if times else None


@dataclass
class BurstResult:
    """One slowloris burst or PATCH storm, and how the API answered meanwhile."""

    kind: str
    started_s: float
    duration_s: float = 0.0
    sent: int = 0  # sockets opened, or PATCH requests sent
    ok: int = 0  # sockets that stayed open to the end, or PATCHes answered 200
    errors: List[str] = field(default_factory=list)
    healthz_ms: List[float] = field(default_factory=list)  # slowloris: /healthz answer times
    healthz_failures: int = 0  # slowloris: /healthz that timed out or failed
    worst_request_ms: float = 0.0  # PATCH storm


def slowloris(host: str, port: int, started_s: float, sockets: int = 32, duration_s: float = 15.0,
              trickle_interval_s: float = 2.0, probe_timeout_s: float = 2.0) -> BurstResult:
    """Open ``sockets`` connections that send one header byte every ``trickle_interval_s``;
    meanwhile time ``GET /healthz`` once a second (a timeout counts as a failure)."""
    result = BurstResult("slowloris", started_s)
    began = time.monotonic()
    conns: List[socket.socket] = []
    try:
        for _ in range(sockets):
            try:
                sock = socket.create_connection((host, port), timeout=2.0)
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                conns.append(sock)
                result.sent += 1
            except OSError as exc:
                result.errors.append(f"connect: {exc}")
        next_trickle = time.monotonic()
        while time.monotonic() - began < duration_s:
            if time.monotonic() >= next_trickle:
                for sock in list(conns):
                    try:
                        sock.send(b"X")
                    except OSError:
                        conns.remove(sock)
                        sock.close()
                next_trickle += trickle_interval_s
            probe_began = time.monotonic()
            try:
                requests.get(f"http://{host}:{port}/healthz", timeout=probe_timeout_s)
                result.healthz_ms.append(round((time.monotonic() - probe_began) * 1000, 1))
            except requests.RequestException:
                result.healthz_failures += 1
            time.sleep(max(0.0, 1.0 - (time.monotonic() - probe_began)))
        result.ok = len(conns)
    finally:
        for sock in conns:
            sock.close()
        result.duration_s = round(time.monotonic() - began, 1)
    return result


def patch_storm(base_url: str, token: str, started_s: float, count: int = 40,
                timeout_s: float = 10.0, deadline_s: float = 60.0) -> BurstResult:
    """``count`` PATCHes of conf_threshold/iou_threshold (read on every batch, no reload),
    back to back; ends with the original values. Stops early at ``deadline_s``."""
    result = BurstResult("patch_storm", started_s)
    began = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"}
    values = [(0.25 + 0.01 * (i % 10), 0.45 + 0.01 * (i % 5)) for i in range(count - 1)] + [(0.25, 0.45)]
    with requests.Session() as session:
        for conf, iou in values:
            if time.monotonic() - began > deadline_s:
                result.errors.append(f"stopped after {deadline_s:g} s")
                break
            request_began = time.monotonic()
            result.sent += 1
            try:
                response = session.patch(f"{base_url}/api/v1/config", headers=headers, timeout=timeout_s,
                                         json={"model": {"conf_threshold": conf, "iou_threshold": iou}})
                if response.status_code == 200:
                    result.ok += 1
                else:
                    result.errors.append(f"{response.status_code}: {response.text[:200]}")
            except requests.RequestException as exc:
                result.errors.append(str(exc)[:200])
            result.worst_request_ms = max(result.worst_request_ms, round((time.monotonic() - request_began) * 1000, 1))
    result.duration_s = round(time.monotonic() - began, 1)
    return result
