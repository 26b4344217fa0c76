"""Fixtures of the fleet tests: a database of each engine, a running fleet service, simulated devices.

``fleet_db_url`` is parametrised over SQLite (a file in tmp_path) and PostgreSQL (a database
with a unique name on the server at ``EDGE_APP_TEST_PG``, default
``postgresql://postgres@127.0.0.1:5432/test``, created for the test and dropped after it).
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, List

import pytest
import requests

from edge_app.api.server import ApiServer
from edge_app.fleet.app import create_fleet_app
from edge_app.fleet.config import FleetConfig
from edge_app.fleet.service import FleetService
from tests.fleet.sim_device import SimDevice

PG_ADMIN_URL = os.environ.get("EDGE_APP_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ENGINES = ["sqlite", "postgresql"]


def _pg_url(dbname: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{dbname}"


@pytest.fixture
def pg_database() -> Iterator[str]:
    """The URL of a fresh PostgreSQL database, dropped afterwards."""
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as err:
        pytest.skip(f"no PostgreSQL at {PG_ADMIN_URL}: {err}")
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


@dataclass
class RunningFleet:
    service: FleetService
    server: ApiServer
    prefix: str

    @property
    def url(self) -> str:
        return self.server.url

    def get(self, path: str, **kwargs) -> requests.Response:
        return requests.get(self.url + path, timeout=10, **kwargs)

    def patch(self, path: str, body, **kwargs) -> requests.Response:
        return requests.patch(self.url + path, json=body, timeout=10, **kwargs)

    def device(self, device_id: str) -> dict:
        response = self.get(f"/api/v1/devices/{device_id}")
        return response.json() if response.status_code == 200 else {}


@pytest.fixture
def fleet_factory(mosquitto_broker, fleet_db_url) -> Iterator[Callable[..., RunningFleet]]:
    """``fleet_factory(**config)`` starts a fleet service on the test broker and database."""
    started: List[RunningFleet] = []

    def make(**overrides) -> RunningFleet:
        prefix = overrides.pop("topic_prefix", f"fleet{uuid.uuid4().hex[:6]}")
        data = {"mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port, "keepalive": 5,
                         "client_id": f"fleet-{uuid.uuid4().hex[:8]}"},
                "topic_prefix": prefix, "database": {"url": fleet_db_url},
                "api": {"host": "127.0.0.1", "port": 0}}
        for key, value in overrides.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        config = FleetConfig.model_validate(data)
        service = FleetService(config)
        service.start()
        assert service.ingest.wait_subscribed(10), "the fleet service did not subscribe"
        server = ApiServer.from_config(create_fleet_app(service), config.api)
        server.start()
        running = RunningFleet(service, server, prefix)
        started.append(running)
        return running

    yield make
    for running in started:
        running.server.stop(2)
        running.service.stop(2)


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
