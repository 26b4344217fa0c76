"""The fleet's MQTT side: a paho subscriber and the one thread that writes to the database.

paho's network thread only sorts a message by its topic and appends it to a queue: it never
touches the database, so a slow disk or a busy PostgreSQL cannot stall acknowledgements or
keepalives (a stalled subscriber would be disconnected by the broker and lose QoS 0 traffic).
The writer thread ``fleet:writer`` takes everything queued, up to ``max_batch`` messages,
and writes it in one transaction (:mod:`edge_app.fleet_service.ingest_batch`).

Before a message is queued, the payload must be within its kind's size, its device admitted,
the payload well-formed (parsed and checked by the rules of its kind) and within the device's
byte budget (:mod:`edge_app.fleet_service.admission`); junk is counted on a budget of its own. A batch the database
refuses while it otherwise works is written again one message at a time, and a message it still
refuses is dropped, counted and logged with its topic: only a database that is away is waited
for, and a writer that makes no progress for ``stuck_after_s`` shows in ``/readyz``.

The session is persistent (``clean_session=False`` under a fixed client id): while the fleet
service restarts, the broker keeps its QoS 1 events for it.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Optional, Tuple

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.process.log_limit import LogLimiter
from edge_app.config.schema import MQTTConfig
from edge_app.fleet_service import messages as m
from edge_app.fleet_service.admission import Admission
from edge_app.fleet_service.db import Connection
from edge_app.fleet_service.ingest_batch import BatchResult, check_message, plan_batch, write_plan
from edge_app.mqtt_takeover import TakeoverWatch

logger = logging.getLogger(__name__)

WRITER_THREAD = "fleet:writer"
MAX_BATCH = 5000
#: Above this many waiting messages the log says the database does not keep up.
BACKLOG_WARNING = 50_000
DB_RETRY_S = 2.0
#: How often old events are deleted; the first time shortly after start.
PRUNE_EVERY_S = 600.0


@dataclass(frozen=True)
class IngestStats:
    connected: bool
    received: int
    written: int
    events: int
    rejected: int
    dropped: int
    backlog: int
    batches: int
    db_errors: int
    oversize: int
    failed: int
    unissued_reports: int
    stuck_s: float
    closed_by_broker: int = 0  # accepted connections the broker closed again (edge_app.mqtt_takeover)
    takeover_warning: Optional[str] = None  # set while that looks like another client taking the session over


class FleetIngest:
    """Subscribes under ``prefix`` and keeps ``conn`` up to date from the writer thread."""

    def __init__(self, mqtt_config: MQTTConfig, client_id: str, prefix: str, conn: Connection,
                 *, events_retain_s: Optional[float] = None, on_batch: Optional[Callable[[BatchResult], None]] = None,
                 max_batch: int = MAX_BATCH, admission: Optional[Admission] = None,
                 message_bytes: Optional[Dict[str, int]] = None, stuck_after_s: float = 60.0,
                 on_desired: Optional[Callable[[str, bytes], None]] = None):
        self._config = mqtt_config
        self._client_id = client_id
        self._prefix = prefix
        self._conn = conn
        self._on_batch = on_batch
        self._max_batch = max_batch
        self._admission = admission if admission is not None else Admission(["*"], 1_000_000, 1 << 40)
        self._message_bytes = dict(message_bytes or {})
        self._stuck_after_s = stuck_after_s
        self._on_desired = on_desired
        self._progress_mono_s = time.monotonic()
        self._writing = False
        self._events_retain_s = events_retain_s
        self._next_prune_mono_s = time.monotonic() + 5.0
        self._queue: Deque[m.Heard] = collections.deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._connected = threading.Event()
        self._subscribed = threading.Event()
        self._client: Optional[mqtt.Client] = None
        self._writer: Optional[threading.Thread] = None
        # Every key exists from the start: the network thread and the writer each add to their own
        # keys, and a dict that never grows is safe to update from both.
        self._counts: Dict[str, int] = dict.fromkeys(
            ("received", "written", "events", "rejected", "dropped", "batches", "db_errors", "oversize", "failed",
             "unissued_reports", "malformed"), 0)
        self._log_limiter = LogLimiter(60.0)
        self._takeover = TakeoverWatch(client_id)

    # -- lifecycle
    def start(self) -> None:
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=self._client_id, clean_session=False)
        client.max_inflight_messages = 1000
        client.max_queued_messages = 0  # rollouts published while the broker is away wait, unbounded
        client.reconnect_delay_set(1, 30)
        if self._config.username is not None:
            client.username_pw_set(self._config.username, self._config.password)
        tls = self._config.tls
        if tls.enabled:
            client.tls_set(ca_certs=tls.ca_certs, certfile=tls.certfile, keyfile=tls.keyfile)
            client.tls_insecure_set(tls.insecure)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        self._client = client
        self._writer = threading.Thread(target=self._write_loop, name=WRITER_THREAD, daemon=True)
        self._writer.start()
        client.connect_async(self._config.host, self._config.port, keepalive=self._config.keepalive)
        client.loop_start()
        logger.info("fleet subscriber for %s:%d started as %r under %r", self._config.host, self._config.port,
                    self._client_id, self._prefix)

    def stop(self, timeout_s: float = 3.0) -> None:
        """Disconnect, then write what was received before returning."""
        with self._wake:
            self._stopping = True
        client = self._client
        if client is not None:
            client.disconnect()
            client.loop_stop()
        with self._wake:
            self._wake.notify_all()
        if self._writer is not None:
            self._writer.join(timeout_s)
            if self._writer.is_alive():
                logger.warning("the fleet writer did not finish within %.1f s; %d messages unwritten",
                               timeout_s, len(self._queue))

    def wait_subscribed(self, timeout_s: float) -> bool:
        return self._subscribed.wait(timeout_s)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def publish(self, topic: str, payload: bytes, *, retain: bool, qos: int = 1) -> None:
        """Thread-safe publish; paho queues it while the broker is away."""
        assert self._client is not None, "the ingest is not started"
        self._client.publish(topic, payload, qos=qos, retain=retain)

    @property
    def admission(self) -> Admission:
        return self._admission

    def stuck_s(self) -> float:
        """How long messages have waited with nothing written, once that is ``stuck_after_s`` or more; else 0."""
        if not self._queue and not self._writing:
            return 0.0
        waited = time.monotonic() - self._progress_mono_s
        return round(waited, 1) if waited >= self._stuck_after_s else 0.0

    def stats(self) -> IngestStats:
        c = self._counts
        takeover = self._takeover.report(time.monotonic())
        # rejected: malformed on arrival (the MQTT thread's count) or, rarely, by the writer (its own)
        return IngestStats(self.connected, c["received"], c["written"], c["events"], c["rejected"] + c["malformed"],
                           c["dropped"],
                           len(self._queue), c["batches"], c["db_errors"], c["oversize"], c["failed"],
                           c["unissued_reports"], self.stuck_s(), takeover.closes_total, takeover.warning)

    # -- paho callbacks (network thread: nothing slow here)
    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        if reason_code.is_failure:
            logger.warning("the broker refused the fleet subscriber: %s", reason_code)
            return
        self._connected.set()
        # Subscribing again also on a resumed session: the retained messages that come with it
        # refresh the inventory after the service was away.
        client.subscribe([(topic, 1) for topic in m.subscriptions(self._prefix)])
        logger.info("fleet subscriber connected (session %s)", "resumed" if flags.session_present else "new")

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        was_connected = self._connected.is_set()
        self._connected.clear()
        if not self._stopping:
            logger.warning("fleet subscriber disconnected (%s); reconnecting", reason_code)
            # A persistent session taken over loses the messages queued for it: say so loudly.
            if was_connected and self._takeover.closed(time.monotonic(), reason_code):
                logger.error("%s", self._takeover.report(time.monotonic()).warning)

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reason_codes: Any, properties: Any) -> None:
        if any(code.is_failure for code in reason_codes):
            logger.error("the broker refused some fleet subscriptions: %s", reason_codes)
        self._subscribed.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        self._counts["received"] += 1
        found = m.classify(self._prefix, message.topic)
        if found is None:
            self._counts["dropped"] += 1
            return
        kind, device_id, key = found
        if kind == m.DESIRED:  # the fleet's own topic, watched, never stored
            if self._on_desired is not None and self._admission.admitted(device_id):
                self._on_desired(device_id, bytes(message.payload))
            return
        size = len(message.payload)
        if m.too_large(kind, size, self._message_bytes):
            self._counts["oversize"] += 1
            self._log_dropped("oversize", "dropped %d bytes on %s: over the %s limit", size, message.topic, kind)
            return
        if not self._admission.admit(device_id):
            self._log_dropped("unknown", "ignored %s: device %r is not admitted (devices.allow, devices.max)",
                              message.topic, device_id)
            return
        heard = m.Heard(kind, device_id, key, bytes(message.payload), bool(message.retain), time.time(), message.topic)
        try:
            # Parsed here, before the budget: junk published under a real device's id must not
            # spend what the device's own messages need. The payload is bounded (message_bytes).
            heard = dataclasses.replace(heard, body=check_message(heard))
        except ValueError as err:
            self._counts["malformed"] += 1
            if self._admission.junk(device_id, size):
                self._log_dropped("junk", "dropped a malformed message on %s: %s", message.topic, err)
            else:
                self._log_dropped("junk budget", "dropping malformed messages under device %r beyond "
                                  "ingest.junk_bytes_per_min (someone else may publish under its id)", device_id)
            return
        if not self._admission.spend(device_id, size):
            self._log_dropped("budget", "dropped %s: device %r is over ingest.device_bytes_per_min",
                              message.topic, device_id)
            return
        with self._wake:
            self._queue.append(heard)
            if len(self._queue) == 1:
                self._wake.notify()

    def _log_dropped(self, key: str, message: str, *args: Any) -> None:
        allowed, suppressed = self._log_limiter.allow(key)
        if allowed:
            logger.warning(message + ("" if not suppressed else f" ({suppressed} more like it not logged)"), *args)

    # -- writer thread
    def _take(self) -> tuple:
        """(batch, stopping): what is queued, after waiting up to a second for something."""
        with self._wake:
            if not self._queue and not self._stopping:
                self._wake.wait(1.0)
            n = min(len(self._queue), self._max_batch)
            batch = [self._queue.popleft() for _ in range(n)]
            if not batch:
                self._progress_mono_s = time.monotonic()  # idle is not stuck
            else:
                self._writing = True
            return batch, self._stopping

    def _write_loop(self) -> None:
        while True:
            batch, stopping = self._take()
            if not batch and stopping:
                return  # stopping and drained
            if len(self._queue) > BACKLOG_WARNING:
                allowed, _ = self._log_limiter.allow("backlog")
                if allowed:
                    logger.warning("the database does not keep up: %d messages waiting", len(self._queue))
            if batch:
                try:
                    self._write(batch)
                finally:
                    self._writing = False
            if self._events_retain_s is not None and time.monotonic() >= self._next_prune_mono_s:
                self._next_prune_mono_s = time.monotonic() + PRUNE_EVERY_S
                self._prune(time.time() - self._events_retain_s)

    def _prune(self, before_s: float) -> None:
        try:
            with self._conn.transaction() as conn:
                conn.execute("DELETE FROM events WHERE received_at < ?", (before_s,))
        except Exception as err:  # pruning again later is fine; the writer must keep going
            logger.warning("deleting old fleet events failed: %s", err)

    def _database_works(self) -> bool:
        try:
            with self._conn.transaction() as conn:
                conn.query("SELECT 1")
            return True
        except Exception:  # whatever keeps a trivial transaction from working means "away"
            return False

    def _commit(self, plan: Any, what: str) -> Tuple[Optional[Exception], int]:
        """(None, reports ignored) once ``plan`` is written; (the error, 0) when a working database refuses it.

        A database that is away is waited for, however long: its messages are kept.
        """
        while True:
            try:
                return None, write_plan(self._conn, plan)
            except Exception as err:
                self._counts["db_errors"] += 1
                if self._database_works():
                    return err, 0
                logger.error("writing %s failed (%s); retrying in %.0f s", what, err, DB_RETRY_S)
                with self._wake:
                    if self._stopping:
                        return err, 0
                    self._wake.wait(DB_RETRY_S)

    def _write(self, batch: list) -> None:
        result = BatchResult()
        err, result.unissued = self._commit(plan_batch(batch, result), f"{len(batch)} fleet messages")
        if err is not None:
            if self._stopping:
                return
            logger.warning("the database refused a batch of %d fleet messages (%s); writing them one at a time",
                           len(batch), err)
            result = BatchResult()
            for heard in batch:
                one = BatchResult()
                err, one.unissued = self._commit(plan_batch([heard], one), heard.topic)
                if err is not None:
                    if self._stopping:
                        return
                    one = BatchResult(messages=1, failed=1)
                    self._log_dropped("failed", "dropped the message on %s: the database refused it (%s)",
                                      heard.topic, err)
                result.add(one)
        self._progress_mono_s = time.monotonic()
        self._counts["failed"] += result.failed
        self._counts["unissued_reports"] += result.unissued
        self._counts["written"] += result.messages - result.rejected - result.failed
        self._counts["events"] += result.events
        self._counts["rejected"] += result.rejected
        self._counts["batches"] += 1
        for reason in result.reasons:
            allowed, _ = self._log_limiter.allow("rejected")
            if allowed:
                logger.warning("ignored a fleet message: %s", reason)
        if self._on_batch is not None:
            self._on_batch(result)
