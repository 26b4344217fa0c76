"""A real Mosquitto broker on a free port, and a subscriber that collects what it receives.

``MosquittoBroker(work_dir, **options)`` is one broker: ``.host``, ``.port``, ``.start()`` (same
port), ``.stop()`` (SIGTERM, state saved), ``.kill()`` (crash), ``.pause()``/``.resume()`` (hung),
``.wait_persisted()``. Its options (``users``, ``allow_anonymous``, ``persistence``,
``extra_config``, ``tls``, ``log_types``, ``binary``) are described with the tests' fixtures in
``tests/support/broker.py``; a benchmark's broker turns persistence off and logs errors only.
``MosquittoFactory`` makes brokers in one folder and stands for its first; ``MqttCollector``
subscribes and keeps every message.
"""
from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Mapping, Optional, Sequence, Union

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from testkit.net import free_port, port_accepts
from testkit.skips import require_tool

MOSQUITTO = os.environ.get("EDGE_APP_MOSQUITTO", "/usr/sbin/mosquitto")
MOSQUITTO_PASSWD = os.environ.get("EDGE_APP_MOSQUITTO_PASSWD", "mosquitto_passwd")


class MosquittoBroker:
    """One ``mosquitto`` process on a fixed port; ``stop()``/``start()`` keep that port."""

    def __init__(
        self,
        work_dir: Path,
        port: Optional[int] = None,
        host: str = "127.0.0.1",
        users: Optional[Mapping[str, str]] = None,
        allow_anonymous: Optional[bool] = None,
        persistence: bool = True,
        extra_config: Sequence[str] = (),
        tls: Any = None,
        require_certificate: bool = False,
        log_types: Sequence[str] = ("error", "warning", "notice", "information"),
        binary: str = MOSQUITTO,
    ) -> None:
        self.binary = require_tool("mosquitto", binary)
        self.host = host
        self.port = port or free_port(host)
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.work_dir / "mosquitto.conf"
        self.log_path = self.work_dir / "mosquitto.log"
        self.password_file: Optional[Path] = None
        self._process: Optional[subprocess.Popen] = None
        lines = [
            f"listener {self.port} {host}",
            # Running as root, mosquitto would switch to the 'mosquitto' user and lose access to tmp_path.
            f"user {getpass.getuser()}",
            f"log_dest file {self.log_path}",
            *(f"log_type {kind}" for kind in log_types),
            "connection_messages true",
        ]
        if tls is not None:
            # Listener options apply to the listener above, whatever general lines follow.
            lines += [f"cafile {tls.ca}", f"certfile {tls.server_cert}", f"keyfile {tls.server_key}",
                      f"require_certificate {'true' if require_certificate else 'false'}"]
        if users:
            self.password_file = self.work_dir / "passwd"
            for name, password in users.items():
                flags = ["-b"] if self.password_file.exists() else ["-c", "-b"]
                subprocess.run([MOSQUITTO_PASSWD, *flags, str(self.password_file), name, password], check=True, capture_output=True)
            lines.append(f"password_file {self.password_file}")
        anonymous = (not users) if allow_anonymous is None else allow_anonymous
        lines.append(f"allow_anonymous {'true' if anonymous else 'false'}")
        if persistence:
            store = self.work_dir / "store"
            store.mkdir(exist_ok=True)
            lines += ["persistence true", f"persistence_location {store}/", "autosave_interval 1"]
        lines += list(extra_config)
        self.config_path.write_text("\n".join(lines) + "\n")

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout_s: float = 10.0) -> "MosquittoBroker":
        """Start (or restart) on the same port; returns once the port accepts connections."""
        if self.running:
            return self
        deadline = time.monotonic() + timeout_s
        with open(self.log_path, "ab") as log_file:
            self._process = subprocess.Popen(
                [self.binary, "-c", str(self.config_path)], stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"mosquitto exited with {self._process.returncode}:\n{self.log_text()[-2000:]}")
            if port_accepts(self.host, self.port):
                return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"mosquitto did not listen on {self.host}:{self.port} within {timeout_s} s:\n{self.log_text()[-2000:]}")

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (mosquitto saves its persistence store) and wait for the exit."""
        self._end(signal.SIGTERM, timeout_s)

    def kill(self) -> None:
        """SIGKILL: a crash, nothing saved since the last autosave."""
        self._end(signal.SIGKILL, 10.0)

    def _end(self, sig: int, timeout_s: float) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        if sig != signal.SIGKILL:
            # A paused broker cannot act on SIGTERM; a killed one must not get to run again first.
            process.send_signal(signal.SIGCONT)
        process.send_signal(sig)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def pause(self) -> None:
        """SIGSTOP: connections stay open but nothing is read or acknowledged (a hung broker)."""
        if self.running:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.running:
            self._process.send_signal(signal.SIGCONT)

    def wait_persisted(self, timeout_s: float = 5.0) -> None:
        """Wait for an autosave that began after this call, so a ``kill()`` keeps current subscriptions."""
        marker = "Saving in-memory database"
        before = self.log_text().count(marker)
        deadline = time.monotonic() + timeout_s
        while self.log_text().count(marker) <= before:
            if time.monotonic() > deadline:
                raise AssertionError(f"mosquitto did not autosave within {timeout_s} s (is persistence on?)")
            time.sleep(0.05)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class MosquittoFactory:
    """Creates brokers in a test's tmp_path; doubles as its first (default) broker."""

    def __init__(self, base_dir: Path) -> None:
        self._base_dir = Path(base_dir)
        self._brokers: List[MosquittoBroker] = []
        self._default: Optional[MosquittoBroker] = None

    def __call__(self, *, start: bool = True, **options: Any) -> MosquittoBroker:
        broker = MosquittoBroker(self._base_dir / f"mosquitto-{len(self._brokers)}", **options)
        self._brokers.append(broker)
        if self._default is None:
            self._default = broker
        return broker.start() if start else broker

    def default(self) -> MosquittoBroker:
        if self._default is None:
            self(start=False)
        assert self._default is not None
        return self._default

    @property
    def host(self) -> str:
        return self.default().start().host

    @property
    def port(self) -> int:
        return self.default().start().port

    def start(self, timeout_s: float = 10.0) -> MosquittoBroker:
        return self.default().start(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        self.default().stop(timeout_s)

    def close(self) -> None:
        for broker in self._brokers:
            broker.kill()


@dataclass(frozen=True)
class ReceivedMessage:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    received_monotonic_s: float

    @property
    def text(self) -> str:
        return self.payload.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.payload)


class MqttCollector:
    """A paho subscriber that keeps every message it receives, in arrival order.

    With ``clean_session=False`` and a fixed ``client_id`` the broker keeps the subscription and
    queues QoS>0 messages while the collector is disconnected (e.g. across a broker restart).
    """

    def __init__(
        self,
        host: str,
        port: int,
        topics: Union[str, Sequence[str]] = "#",
        *,
        qos: int = 1,
        client_id: Optional[str] = None,
        clean_session: bool = True,
        username: Optional[str] = None,
        password: Optional[str] = None,
        reconnect_max_delay_s: int = 2,
    ) -> None:
        self.host, self.port = host, port
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self.qos = qos
        self.client_id = client_id or f"collector-{uuid.uuid4().hex[:10]}"
        self._cond = threading.Condition()
        self._messages: List[ReceivedMessage] = []
        self._connected = False
        self._subscribed = threading.Event()
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=self.client_id, clean_session=clean_session)
        if username is not None:
            self._client.username_pw_set(username, password)
        self._client.reconnect_delay_set(1, reconnect_max_delay_s)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message

    # -- lifecycle
    def start(self, timeout_s: float = 5.0, wait: bool = True) -> "MqttCollector":
        """Connect in the background; with ``wait``, return once the subscription is acknowledged."""
        self._client.connect_async(self.host, self.port, keepalive=10)
        self._client.loop_start()
        if wait and not self._subscribed.wait(timeout_s):
            raise AssertionError(f"collector {self.client_id} not subscribed to {self.host}:{self.port} within {timeout_s} s")
        return self

    def stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    @property
    def connected(self) -> bool:
        with self._cond:
            return self._connected

    def wait_connected(self, timeout_s: float = 5.0) -> None:
        self.wait_until(lambda: self._connected, timeout_s, "collector connected")

    # -- reading
    def _matching(self, topic_filter: str) -> List[ReceivedMessage]:
        return [m for m in self._messages if mqtt.topic_matches_sub(topic_filter, m.topic)]

    def messages(self, topic_filter: str = "#") -> List[ReceivedMessage]:
        """Snapshot of the messages whose topic matches ``topic_filter`` (MQTT wildcards)."""
        with self._cond:
            return self._matching(topic_filter)

    def payloads(self, topic_filter: str = "#") -> List[Any]:
        return [m.json() for m in self.messages(topic_filter)]

    def clear(self) -> None:
        with self._cond:
            self._messages.clear()

    def wait_until(self, condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                result = condition()
                if result:
                    return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; received: {self._summary()}")
                self._cond.wait(remaining)

    def wait_for(self, predicate: Callable[[List[ReceivedMessage]], Any], timeout_s: float = 5.0) -> Any:
        """Wait until ``predicate(messages)`` is truthy (all messages so far) and return its value.

        Raises AssertionError with a summary of what arrived on timeout.
        """
        return self.wait_until(lambda: predicate(list(self._messages)), timeout_s, "predicate")

    def wait_for_message(
        self, topic_filter: str = "#", match: Optional[Callable[[ReceivedMessage], bool]] = None, timeout_s: float = 5.0
    ) -> ReceivedMessage:
        """The first message (already received or yet to come) on ``topic_filter`` that ``match`` accepts."""
        found = lambda: next((m for m in self._matching(topic_filter) if match is None or match(m)), None)  # noqa: E731
        return self.wait_until(found, timeout_s, f"a message on {topic_filter}")

    def wait_for_count(self, count: int, topic_filter: str = "#", timeout_s: float = 5.0) -> List[ReceivedMessage]:
        """Wait until at least ``count`` messages matched ``topic_filter``; return them all."""
        enough = lambda: len(self._matching(topic_filter)) >= count  # noqa: E731
        self.wait_until(enough, timeout_s, f"{count} messages on {topic_filter}")
        return self.messages(topic_filter)

    def _summary(self) -> str:
        tail = [f"{m.topic} {m.payload[:80]!r}" for m in self._messages[-5:]]
        return f"{len(self._messages)} messages, last: {tail}"

    # -- paho callbacks (network thread)
    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        if reason_code.is_failure:
            return
        with self._cond:
            self._connected = True
            self._cond.notify_all()
        # A resumed persistent session still has its subscriptions; subscribing again would
        # make the broker re-send every retained message.
        if flags.session_present and self._subscribed.is_set():
            return
        client.subscribe([(topic, self.qos) for topic in self.topics])

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any) -> None:
        with self._cond:
            self._connected = False
            self._cond.notify_all()

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reason_codes: Any, properties: Any) -> None:
        self._subscribed.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        received = ReceivedMessage(message.topic, bytes(message.payload), message.qos, bool(message.retain), time.monotonic())
        with self._cond:
            self._messages.append(received)
            self._cond.notify_all()
