"""A subscriber on the local broker that sees what the appliance really published.

``WatcherProcess`` runs it in a process of its own (``python -m bench.common.mqtt_watch``), so the
process being measured does not also receive and parse every message it publishes: a
subscriber thread there would take turns on the interpreter lock with the pipeline's threads.
"""
from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

log = logging.getLogger(__name__)

#: the benchmark's subscribers have client ids ending so, next to the appliance's own
WATCHER_SUFFIX = "-watch"


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


class WatcherProcess:
    """A ``DetectionsWatcher`` in a child process, with the same interface.

    Started with ``subprocess``, not ``multiprocessing``: the resource meter counts the
    ``multiprocessing`` children as the appliance's decoder processes. One JSON line per request
    and per answer on the child's stdin and stdout.
    """

    def __init__(self, host: str, port: int, topic_filter: str, client_id: str, answer_timeout_s: float = 10.0) -> None:
        self._argv = [sys.executable, "-m", "bench.common.mqtt_watch", host, str(port), topic_filter, client_id]
        self._answer_timeout_s = answer_timeout_s
        self._process: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()
        self._recording = False

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid if self._process is not None else None

    def start(self, timeout_s: float = 5.0) -> bool:
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        self._process = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         bufsize=1, env=env, cwd=root)
        answer = self._ask({"op": "start", "timeout_s": timeout_s}, timeout_s + self._answer_timeout_s)
        return bool(answer and answer.get("subscribed"))

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.write(json.dumps({"op": "stop"}) + "\n")
            process.stdin.flush()
        except (OSError, ValueError):
            pass
        try:
            process.wait(5.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5.0)

    @property
    def recording(self) -> bool:
        return self._recording

    @recording.setter
    def recording(self, on: bool) -> None:
        self._ask({"op": "record", "on": bool(on)})  # in effect once answered
        self._recording = bool(on)

    def counts(self) -> Dict[str, int]:
        return dict((self._ask({"op": "counts"}) or {}).get("counts", {}))

    def latencies_ms(self) -> List[float]:
        return list((self._ask({"op": "latencies_ms"}) or {}).get("latencies_ms", []))

    def delivered_ms(self) -> List[float]:
        return list((self._ask({"op": "delivered_ms"}) or {}).get("delivered_ms", []))

    def _ask(self, request: Dict[str, Any], timeout_s: Optional[float] = None) -> Optional[Dict[str, Any]]:
        with self._lock:
            process = self._process
            if process is None or process.poll() is not None:
                raise RuntimeError("the MQTT watcher process is not running")
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], timeout_s or self._answer_timeout_s)
            if not ready:
                raise RuntimeError(f"the MQTT watcher process did not answer {request['op']!r}")
            line = process.stdout.readline()
            return json.loads(line) if line else None


def serve(host: str, port: int, topic_filter: str, client_id: str) -> int:
    """The child of ``WatcherProcess``: answers one JSON line per request line on stdin."""
    watcher = DetectionsWatcher(host, port, topic_filter, client_id)
    started = False
    try:
        for line in sys.stdin:
            request = json.loads(line)
            op = request.get("op")
            if op == "stop":
                return 0
            if op == "start":
                try:
                    started = watcher.start(float(request.get("timeout_s", 5.0)))
                except OSError as err:
                    log.warning("cannot reach the broker: %s", err)
                answer: Dict[str, Any] = {"subscribed": started}
            elif op == "record":
                watcher.recording = bool(request.get("on"))
                answer = {"recording": watcher.recording}
            elif op == "counts":
                answer = {"counts": watcher.counts()}
            elif op == "latencies_ms":
                answer = {"latencies_ms": watcher.latencies_ms()}
            elif op == "delivered_ms":
                answer = {"delivered_ms": watcher.delivered_ms()}
            else:
                answer = {"error": f"unknown request {op!r}"}
            print(json.dumps(answer), flush=True)
        return 0
    finally:
        if started:
            watcher.stop()


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]))
