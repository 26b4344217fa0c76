"""The publisher's network loop, guarded and supervised (a part of ``MqttPublisher``).

* Every paho callback is installed through one :class:`CallbackGuard`, so no exception ever
  leaves a callback into paho; paho's own ``suppress_exceptions`` is set as a second net.
* A supervisor thread (``mqtt:supervisor``) looks at the link every ``SUPERVISE_EVERY_S``. When
  paho's network thread has ended while the publisher runs, the publisher is marked
  disconnected (so status does not claim a link nobody reads), the client reconnects (a fresh
  socket and a clean read state: a packet whose handling failed is not handled again) and the
  network loop is started again; QoS 1 messages the old link left unacknowledged are sent again
  by ``on_connect`` as after any reconnect. A link that is connected but stopped moving is
  reported as stalled (``edge_app.mqtt.link_stall_watch``); a thread stuck in a callback cannot be
  taken back from inside the process, so the systemd watchdog stops being fed then.

Uses only the public methods of the publisher's :class:`~edge_app.mqtt.outbox.Outbox`.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional

from edge_app.mqtt.callback_guard import CallbackGuard
from edge_app.mqtt.link_stall_watch import LinkActivity, LinkHealth, LinkTracker, assess_link, stall_after_s_for
from edge_app.mqtt.outbox import Outbox
from edge_app.process.backoff import next_retry_s

log = logging.getLogger(__name__)

SUPERVISE_EVERY_S = 1.0
#: a thread that keeps dying is started again at most this often (the gap doubles from 1 s)
MAX_RESTART_GAP_S = 60.0
#: callbacks that prove the network thread reads from the broker
_TRAFFIC = frozenset({"on_connect", "on_publish", "on_message", "on_subscribe"})


def loop_alive(client: Any) -> bool:
    """Whether paho's network thread runs. paho 2.x keeps it in ``_thread`` and clears that when the thread ends."""
    thread = getattr(client, "_thread", None)
    return isinstance(thread, threading.Thread) and thread.is_alive()


class LinkSupervisor:
    """Callback guard, stall detection and restart of the network loop for :class:`MqttPublisher`."""

    def __init__(self, outbox: Outbox, stall_after_s: Optional[float]) -> None:
        self._outbox = outbox
        self._guard = CallbackGuard()
        self._link = LinkTracker()
        self._stall_after_s = stall_after_s_for(outbox.config.keepalive) if stall_after_s is None else stall_after_s
        self._lock = threading.Lock()  # guards the restart count and _link_running; never held while calling the outbox
        self._loop_restarts = 0
        self._restart_gap_s = 0.0  # doubles while the thread keeps dying; back to 0 once a restart held
        self._restart_due_s = 0.0
        self._link_running = False  # the network loop was started and stop() has not begun
        self._link_stalled = False
        self._supervisor: Optional[threading.Thread] = None
        self._supervisor_stop = threading.Event()

    def health(self) -> LinkHealth:
        """Whether the MQTT link is stalled, and why."""
        now_s = time.monotonic()
        return assess_link(self._link_activity(now_s), now_s, self._stall_after_s)

    def _link_activity(self, now_s: float) -> LinkActivity:
        client, _stopping, connected, waiting = self._outbox.waiting()
        with self._lock:
            running = self._link_running
        since_s = self._link.observe(waiting, now_s)
        return LinkActivity(running, client is not None and loop_alive(client), connected, waiting, since_s)

    def stats(self) -> Dict[str, Any]:
        """The link's fields of ``stats()``; ``connected`` is true only while paho's thread reads the link."""
        now_s = time.monotonic()
        activity = self._link_activity(now_s)
        health = assess_link(activity, now_s, self._stall_after_s)
        with self._lock:
            restarts = self._loop_restarts
        return {"connected": activity.connected and activity.loop_alive, "stalled": health.stalled,
                "stall_reason": health.reason, "loop_restarts": restarts, "callback_errors": self._guard.errors()}

    def install(self, client: Any, callbacks: Mapping[str, Callable[..., Any]]) -> None:
        client.suppress_exceptions = True  # under the guard, in case anything gets past it

        def moving(callback: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any) -> None:
                self._link.moved(time.monotonic())
                callback(*args)
            call.__name__ = getattr(callback, "__name__", "callback")
            return call

        self._guard.install(client, {name: moving(cb) if name in _TRAFFIC else cb for name, cb in callbacks.items()})

    def start(self) -> None:
        """Call right after ``loop_start()``."""
        with self._lock:
            self._link_running = True
        self._supervisor_stop.clear()
        self._supervisor = threading.Thread(target=self._supervise, name="mqtt:supervisor", daemon=True)
        self._supervisor.start()

    def stop(self, timeout_s: float) -> None:
        """Call before disconnecting, so that no restart races the stop."""
        with self._lock:
            self._link_running = False
        self._supervisor_stop.set()
        supervisor = self._supervisor
        if supervisor is not None and supervisor is not threading.current_thread():
            supervisor.join(max(0.1, timeout_s))

    def _supervise(self) -> None:
        while not self._supervisor_stop.wait(SUPERVISE_EVERY_S):
            try:
                self._supervise_once()
            except Exception as err:  # the supervisor must outlive whatever it looks at
                self._guard.caught("supervisor", err)

    def _supervise_once(self) -> None:
        client, stopping, _connected, _waiting = self._outbox.waiting()
        with self._lock:
            running = self._link_running and not stopping
        now_s = time.monotonic()
        if client is not None and running and not loop_alive(client):
            if now_s >= self._restart_due_s:
                self._restart_gap_s = next_retry_s(self._restart_gap_s or None, 1.0, MAX_RESTART_GAP_S)
                self._restart_due_s = now_s + self._restart_gap_s
                self._restart_loop(client)
            return
        if now_s >= self._restart_due_s + self._restart_gap_s:
            self._restart_gap_s = 0.0  # the last restart held for a while
        health = self.health()
        if health.stalled and not self._link_stalled:
            log.error("the MQTT link is stalled: %s", health.reason)
        elif self._link_stalled and not health.stalled:
            log.info("the MQTT link moves again")
        self._link_stalled = health.stalled

    def _restart_loop(self, client: Any) -> None:
        # Under the send lock: the sender would otherwise write on the socket reconnect() replaces.
        with self._outbox.sending():
            with self._lock:
                if not self._link_running:
                    return
            if not self._outbox.mark_link_lost(client):
                return
            with self._lock:
                self._loop_restarts += 1
                restarts = self._loop_restarts
            log.error("the MQTT network thread has stopped; restarting it (%d restarts so far)", restarts)
            try:
                client.reconnect()
            except (OSError, ValueError) as err:  # the restarted loop keeps retrying with its backoff
                self._outbox.note_error(f"MQTT reconnect after restarting the network thread failed: {err}; retrying")
            client.loop_start()
