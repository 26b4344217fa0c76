"""Fixtures of the fleet tests: a database of each engine, a running fleet service, simulated devices.

``fleet_db_url`` is parametrised over SQLite (a file in tmp_path) and PostgreSQL (a database
with a unique name on the server at ``EDGE_APP_TEST_PG``, default
``postgresql://postgres@127.0.0.1:5432/test``, created for the test and dropped after it).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

from tests.support.fleet import RunningFleet, start_fleet
from tests.support.fleet_devices import SimDevice
from testkit.skips import missing, require_module

PG_ADMIN_URL = os.environ.get("EDGE_APP_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ENGINES = ["sqlite", "postgresql"]


def _pg_url(dbname: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{dbname}"


@pytest.fixture
def pg_database() -> Iterator[str]:
    """The URL of a fresh PostgreSQL database, dropped afterwards."""
    psycopg = require_module("psycopg")
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as err:
        missing(f"no PostgreSQL at {PG_ADMIN_URL} (scripts/system-deps.sh starts one; EDGE_APP_TEST_PG "
                f"points elsewhere): {err}")
    name = f"fleet_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _pg_url(name)
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


@pytest.fixture(params=ENGINES)
def fleet_db_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    return request.getfixturevalue("pg_database")


@pytest.fixture
def fleet_factory(mosquitto_broker, fleet_db_url) -> Iterator[Callable[..., RunningFleet]]:
    """``fleet_factory(**config)`` starts a fleet service on the test broker and database."""
    started: List[RunningFleet] = []

    def make(**overrides) -> RunningFleet:
        running = start_fleet(mosquitto_broker, fleet_db_url, **overrides)
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()


@pytest.fixture
def sim_devices(mosquitto_broker) -> Iterator[Callable[..., SimDevice]]:
    """``sim_devices(prefix, device_id, **options)``: a connected simulated appliance, stopped at teardown."""
    devices: List[SimDevice] = []

    def make(prefix: str, device_id: str, **options) -> SimDevice:
        device = SimDevice(mosquitto_broker.host, mosquitto_broker.port, prefix, device_id, **options)
        devices.append(device)
        return device.start()

    yield make
    for device in devices:
        device.kill()
