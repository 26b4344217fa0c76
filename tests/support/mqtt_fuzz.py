"""Hostile MQTT payloads and a bounded sender, for fuzzing whatever subscribes on a broker.

The payloads are the ones an anonymous client on a home or shop broker can send to any topic:
nesting deep enough to exhaust a recursive parser, numbers no database column holds, NaN, wrong
JSON types, binary and invalid UTF-8, 10 MB bodies, desired messages just under the size limit
with no signature or a forged one, retained commands, floods (also ``mosquitto_pub -l`` of
``{}`` lines, as the attack ran it), and random JSON. Generation is seeded, so a failing run can
be repeated with the same seed.
"""
from __future__ import annotations

import json
import random
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, Sequence

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from testkit.skips import require_tool

TEN_MB = 10 * 1024 * 1024
#: Fixed payloads sent retained in the first round: met again at every (re)subscription.
RETAINED = ("deep-brackets-200k", "int-2^64", "nan", "takeover", "retained-off")


def _big_desired(target_bytes: int = 250_000) -> bytes:
    """A desired message of cameras and zones just under the appliance's 256 KiB limit, unsigned."""
    zones = [{"name": f"z{z}", "polygon": [[0.1 * p, 0.05 * z] for p in range(8)]} for z in range(4)]
    camera = json.dumps({"id": "camNNNN", "source": "rtsp://10.0.0.1/stream", "zones": zones})
    count = target_bytes // (len(camera) + 2)
    cameras = [json.loads(camera.replace("NNNN", f"{i:04d}")) for i in range(count)]
    return json.dumps({"version": 7, "patch": {"cameras": cameras}}).encode()


def _fixed_payloads() -> Dict[str, bytes]:
    return {
        "empty": b"",
        "deep-brackets-200k": b"[" * 200_000,
        "deep-objects": b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
        "unclosed-deep": b'{"version":1,"patch":' + b"[" * 50_000,
        "int-2^64": b'{"version":18446744073709551616,"status":"applied","errors":[]}',
        "int-2^53": json.dumps({"version": 2 ** 53, "status": "applied", "errors": [], "patch": {}}).encode(),
        "int-negative-huge": b'{"version":-99999999999999999999999,"patch":{}}',
        "float-overflow": b'{"version":1e999,"patch":{"detect":{"conf_threshold":1e999}}}',
        "nan": b'{"version":NaN,"patch":{},"fps":NaN,"ts":Infinity}',
        "wrong-type-list": b"[]",
        "wrong-type-string": b'"applied"',
        "wrong-type-null": b"null",
        "wrong-type-bool": b"true",
        "wrong-field-types": b'{"version":"7","patch":[],"status":5,"errors":{"a":1},"cameras":"x","ts":"now"}',
        "long-strings": json.dumps({"status": "a" * 200_000, "device_id": "b" * 100_000}).encode(),
        "many-keys": json.dumps({f"k{i}": i for i in range(50_000)}).encode(),
        "bidi": json.dumps({"version": 3, "patch": {"device_id": "cam\u202eevil"}, "label": "per\u202eson"}).encode(),
        "invalid-utf8": b"\xff\xfe\xfd" + b"\xc3\x28" * 100,
        "nul-bytes": b"ON\x00OFF\x00" * 50,
        "takeover": json.dumps({"version": 1, "patch": {"api": {"token": "attacker-owned-token-1234567890",
                                                                 "host": "0.0.0.0"},
                                                         "mqtt": {"port": 1}}}).encode(),
        "ten-mb-json": b'{"a":"' + b"x" * TEN_MB + b'"}',
        "ten-mb-binary": bytes(range(256)) * (TEN_MB // 256),
        "ha-offline": b"offline",
        "switch-garbage": b"ONN",
        "big-unsigned-desired": _big_desired(),
        # A signature of the right form but wrong digits: parsed, canonicalised, refused; bounded by the rate.
        "big-forged-desired": _big_desired()[:-1] + b', "sig": "hmac-sha256:' + b"0" * 64 + b'"}',
        "uppercase-sig": json.dumps({"version": 9, "patch": {}, "sig": "HMAC-SHA256:" + "A" * 64}).encode(),
        "retained-off": b"OFF",  # sent retained: a command the broker would replay at every reconnect
        # Event-shaped, so that they reach the fleet's checks: a score beyond a float, and a start ten
        # days ahead that would pin the event on top of every list sorted by time.
        "event-score-1e400": b'{"type":"new","before":null,"after":{"id":"1.0-cam1-1","camera_id":"cam1",'
                             b'"label":"person","score":1e400,"top_score":1e400,"start_time":1.0,"end_time":null}}',
        "event-far-future": json.dumps({"type": "new", "before": None, "after": {
            "id": "2.0-cam1-2", "camera_id": "cam1", "label": "person", "score": 0.9, "top_score": 0.9,
            "start_time": time.time() + 10 * 86400, "end_time": None}}).encode(),
    }


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value; containers get rarer deeper down, so it stays small."""
    kinds = ["int", "bigint", "float", "str", "bool", "null"] + (["list", "dict"] * 2 if depth < 8 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-10, 10)
    if kind == "bigint":
        return rng.choice([2 ** 53, 2 ** 53 + 1, 2 ** 63, 2 ** 64, -(2 ** 63) - 1, 10 ** 30])
    if kind == "float":
        return rng.choice([0.5, -1.0, 1e308, 5e-324, 1e-10])
    if kind == "str":
        alphabet = "aZ09 /#+\u202e\u0000\u00e9\U0001F600\"\\"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    keys = ["version", "patch", "status", "errors", "ts", "cameras", "state", "fps", "api", "token",
            "label", "count", "id", "loc", "msg", "detect", "device_id"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def hostile_payloads(rng: random.Random, random_count: int = 50) -> Iterator[tuple]:
    """``(name, payload)``: every fixed hostile payload, then ``random_count`` random JSON ones."""
    yield from _fixed_payloads().items()
    for i in range(random_count):
        yield f"random-{i}", json.dumps(random_json(rng)).encode()


@dataclass
class FuzzReport:
    """What was sent: messages per topic and in all, and how long it took."""

    sent_by_topic: Dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def sent(self) -> int:
        return sum(self.sent_by_topic.values())


class FuzzClient:
    """One anonymous paho client that publishes as fast as the broker takes it, with bounded waits."""

    def __init__(self, host: str, port: int) -> None:
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"fuzz-{random.getrandbits(32):08x}")
        self._client.max_queued_messages_set(2000)
        self._client.connect(host, port, keepalive=30)
        self._client.loop_start()

    def send(self, topic: str, payload: bytes, *, qos: int = 0, retain: bool = False, timeout_s: float = 30) -> None:
        info = self._client.publish(topic, payload, qos=qos, retain=retain)
        if qos or len(payload) > 1_000_000:
            info.wait_for_publish(timeout_s)

    def flood(self, topic: str, payloads: Sequence[bytes], count: int) -> None:
        """``count`` QoS 0 messages cycling through ``payloads``; waits for the socket now and then."""
        for i in range(count):
            info = self._client.publish(topic, payloads[i % len(payloads)], qos=0)
            if i % 500 == 499:
                info.wait_for_publish(30)

    def clear_retained(self, topics: Sequence[str]) -> None:
        for topic in topics:
            self.send(topic, b"", qos=1, retain=True)

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()


def line_flood(host: str, port: int, topic: str, lines: int, line: bytes = b"{}") -> float:
    """``yes LINE | head -n LINES | mosquitto_pub -l -t TOPIC``; the seconds it took."""
    mosquitto_pub = require_tool("mosquitto_pub")
    started = time.monotonic()
    subprocess.run([mosquitto_pub, "-h", host, "-p", str(port), "-t", topic, "-l"], input=(line + b"\n") * lines,
                   check=True, timeout=600)
    return time.monotonic() - started


def fuzz_topics(client: FuzzClient, topics: Sequence[str], *, seed: int, duration_s: float,
                flood_count: int = 10_000, between: Callable[[], None] = lambda: None) -> FuzzReport:
    """Send every hostile payload to every topic (some retained), then floods, until ``duration_s``.

    ``between`` runs after each round over the topics (a legitimate message, a liveness check).
    At least one whole round is sent, however short ``duration_s`` is.
    """
    rng = random.Random(seed)
    report = FuzzReport()
    started = time.monotonic()
    rounds = 0
    while rounds == 0 or time.monotonic() - started < duration_s:
        for topic in topics:
            for name, payload in hostile_payloads(rng):
                # A retained hostile message is met again at every (re)start of the subscriber.
                retain = name in RETAINED and rounds == 0
                client.send(topic, payload, qos=1 if retain else 0, retain=retain)
                report.sent_by_topic[topic] = report.sent_by_topic.get(topic, 0) + 1
            client.flood(topic, [b"ON", b"OFF", b"[" * 1000, b'{"version":1}'], flood_count)
            report.sent_by_topic[topic] += flood_count
        between()
        rounds += 1
    report.duration_s = time.monotonic() - started
    return report


__all__ = ["FuzzClient", "FuzzReport", "RETAINED", "TEN_MB", "fuzz_topics", "hostile_payloads", "line_flood", "random_json"]
