"""Keeping each device's retained ``R/config/desired`` what the fleet published there.

The desired message of a rollout is retained so an appliance that is away gets it when it comes
back. Anyone who can publish on the topic can clear it (an empty retained message) or replace
it, and an offline device would then never hear of its rollout. So the fleet subscribes to the
desired topics too: when what the broker holds for a device is not the message the fleet last
published there and a version is still pending for the device, the pending version is published
again, issued anew (:meth:`edge_app.fleet_service.rollouts.Rollouts.republish`). What the fleet
hears on those topics is never taken as a version (``messages.subscriptions``).

paho's network thread only notes the newest message per device; the ``fleet:desired`` thread
compares and publishes, at most once per ``REPUBLISH_EVERY_S`` per device however many messages
an attacker sends.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Dict

from edge_app.fleet_service import messages as m
from edge_app.process.worker import WorkerThread

logger = logging.getLogger(__name__)

WATCH_THREAD = "fleet:desired"
REPUBLISH_EVERY_S = 1.0

Publish = Callable[[str, bytes], None]


class DesiredWatch:
    """``publish`` is what the rollouts publish through; ``heard`` is what the broker delivers back."""

    def __init__(self, prefix: str, publish: Publish, republish: Callable[[str], bool]):
        self._prefix = prefix
        self._publish = publish
        self._republish = republish
        self._lock = threading.Lock()
        self._published: Dict[str, bytes] = {}  # device id -> the desired message the fleet last published
        self._heard: Dict[str, bytes] = {}  # device id -> the newest message heard, not yet compared
        self._last_mono_s: Dict[str, float] = {}
        self._wake = threading.Event()
        self._worker = WorkerThread(self._loop, WATCH_THREAD, wake=self._wake.set)

    def start(self) -> None:
        self._worker.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._worker.stop(timeout_s)

    def publish(self, topic: str, body: bytes) -> None:
        found = m.classify(self._prefix, topic)
        if found is not None:
            with self._lock:
                self._published[found[1]] = bytes(body)
        self._publish(topic, body)

    def heard(self, device_id: str, payload: bytes) -> None:
        """The broker delivered ``payload`` on ``device_id``'s desired topic (network thread: no waiting)."""
        with self._lock:
            if self._published.get(device_id) == payload:
                self._heard.pop(device_id, None)
                return
            self._heard[device_id] = bytes(payload)
        self._wake.set()

    def _due(self) -> Dict[str, bytes]:
        now_s = time.monotonic()
        with self._lock:
            due = {dev: body for dev, body in self._heard.items()
                   if now_s - self._last_mono_s.get(dev, -REPUBLISH_EVERY_S) >= REPUBLISH_EVERY_S}
            for dev in due:
                del self._heard[dev]
                self._last_mono_s[dev] = now_s
            if not self._heard:
                self._wake.clear()
        return due

    def _loop(self) -> None:
        while not self._worker.stopping.is_set():
            self._wake.wait(REPUBLISH_EVERY_S)
            if self._worker.stopping.is_set():
                return
            for device_id in self._due():
                try:
                    self._republish(device_id)
                except Exception as err:  # a database away: the next message on the topic asks again
                    logger.warning("publishing the desired configuration of %s again failed: %s", device_id, err)
            time.sleep(0.05)  # a flood on many topics is taken in rounds, not one message at a time
