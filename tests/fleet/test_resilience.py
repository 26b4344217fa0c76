"""What the fleet service survives: a lost PostgreSQL connection, old events, a broker restart."""
from __future__ import annotations

import time

import pytest

from testkit.waiting import wait_for


def _terminate_other_backends(db_url: str) -> int:
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
    return len(rows)


@pytest.mark.parametrize("fleet_db_url", ["postgresql"], indirect=True)
def test_lost_postgresql_connections_come_back_and_nothing_is_lost(fleet_factory, sim_devices, fleet_db_url):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.device("edge-a").get("state") == "online", 10, "online")
    assert _terminate_other_backends(fleet_db_url) == 2  # the writer's and the API's
    for i in range(20):
        device.event("new", f"ev-{i}")
    wait_for(lambda: fleet.get("/api/v1/events?limit=100").status_code == 200 and
             len(fleet.get("/api/v1/events?limit=100").json()["events"]) == 20, 15, "every event after reconnecting")
    assert fleet.get("/api/v1/status").json()["mqtt"]["db_errors"] >= 1


def test_events_older_than_the_retention_are_deleted(fleet_factory, sim_devices):
    fleet = fleet_factory(database={"events_retain_days": 2 / 86400})  # two seconds
    device = sim_devices(fleet.prefix, "edge-a")
    device.event("new", "old")
    wait_for(lambda: fleet.get("/api/v1/events").json()["events"], 10, "the first event")
    # The first pruning runs a few seconds after start; later ones every few minutes.
    wait_for(lambda: not fleet.get("/api/v1/events").json()["events"], 15, "the old event deleted")
    device.event("new", "new")
    wait_for(lambda: fleet.get("/api/v1/events").json()["events"], 10, "the next event kept")


def test_a_broker_restart_loses_no_qos1_event_and_refreshes_states(fleet_factory, sim_devices, mosquitto_broker):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.device("edge-a").get("state") == "online", 10, "online")
    mosquitto_broker.wait_persisted()
    mosquitto_broker.stop()
    time.sleep(1)
    mosquitto_broker.start()
    # paho on both sides reconnects on its own; QoS 1 events sent meanwhile are delivered after.
    for i in range(10):
        device.event("new", f"after-{i}")
    wait_for(lambda: len(fleet.get("/api/v1/events?limit=100").json()["events"]) == 10, 30, "all ten events")
    assert fleet.get("/readyz").status_code == 200
