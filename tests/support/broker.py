"""A real Mosquitto broker per test, and a subscriber that collects what it receives.

Fixtures
--------
``mosquitto_factory``
    Callable: ``mosquitto_factory(**options) -> MosquittoBroker``, started unless
    ``start=False``. Options: ``users={"name": "password"}`` (writes a password file and turns
    anonymous access off), ``allow_anonymous``, ``persistence`` (default on, in the test's
    tmp_path, so a ``stop()``/``start()`` keeps retained messages and persistent sessions),
    ``extra_config=["max_queued_messages 5000", ...]``, ``port``, ``tls`` (anything with ``.ca``,
    ``.server_cert``, ``.server_key`` paths, e.g. ``testkit.certs.make_test_certificates``)
    with ``require_certificate``, ``log_types`` (default error to information), ``binary``
    (default ``EDGE_APP_MOSQUITTO`` or /usr/sbin/mosquitto).
    The factory also stands for its first (default) broker: ``mosquitto_factory.host``,
    ``.port``, ``.start()``, ``.stop()`` create and use that one. Every broker is killed at
    teardown. A broker has ``.host``, ``.port``, ``.start()`` (same port), ``.stop()`` (SIGTERM,
    state saved), ``.kill()`` (crash), ``.pause()``/``.resume()`` (hung), ``.wait_persisted()``.
``mosquitto_broker``
    The default broker, started.
``mqtt_collector``
    Callable: ``mqtt_collector(broker, topics="#", **options) -> MqttCollector``, connected and
    subscribed; ``broker`` is anything with ``.host`` and ``.port``. Stopped at teardown.

The brokers and the collector are the kit's (``testkit.broker``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, List, Sequence, Union

import pytest

from testkit.broker import MosquittoBroker, MosquittoFactory, MqttCollector


@pytest.fixture
def mosquitto_factory(tmp_path: Path):
    factory = MosquittoFactory(tmp_path)
    yield factory
    factory.close()


@pytest.fixture
def mosquitto_broker(mosquitto_factory: MosquittoFactory) -> MosquittoBroker:
    return mosquitto_factory.default().start()


@pytest.fixture
def mqtt_collector():
    collectors: List[MqttCollector] = []

    def make(broker: Any, topics: Union[str, Sequence[str]] = "#", *, wait: bool = True, **options: Any) -> MqttCollector:
        collector = MqttCollector(broker.host, broker.port, topics, **options)
        collectors.append(collector)
        return collector.start(wait=wait)

    yield make
    for collector in collectors:
        collector.stop()
