"""The broker is not trusted: what anyone who can publish under the prefix cannot do to the fleet service.

A real Mosquitto, a real fleet service, SQLite and PostgreSQL. Each message here is one an
anonymous client (or any device under the documented ACL) can publish.
"""
from __future__ import annotations

import json
import logging
import time
import sqlite3
import uuid

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.fleet_service.db import connect
from testkit.waiting import wait_for


class Publisher:
    """An anonymous client publishing whatever it likes, QoS 1."""

    def __init__(self, broker):
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"anyone-{uuid.uuid4().hex[:8]}")
        self.client.max_inflight_messages_set(1000)
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()

    def send(self, topic: str, payload, retain: bool = False) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.client.publish(topic, body, qos=1, retain=retain).wait_for_publish(10)

    def flood(self, messages, retain: bool = False) -> None:
        infos = [self.client.publish(topic, body, qos=1, retain=retain) for topic, body in messages]
        for info in infos:
            info.wait_for_publish(30)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def mosquitto_broker(mosquitto_factory):
    # The floods here come faster than a busy test machine hands them on: room in the broker's queue.
    return mosquitto_factory(extra_config=["max_queued_messages 20000"])


@pytest.fixture
def anyone(mosquitto_broker):
    publisher = Publisher(mosquitto_broker)
    yield publisher
    publisher.close()


def _status(fleet) -> dict:
    return fleet.get("/api/v1/status").json()


def _stats_fps(fleet, device_id: str):
    return (fleet.device(device_id).get("stats") or {}).get("fps")


def test_a_report_of_2_to_the_64_is_refused_and_ingest_goes_on(fleet_factory, sim_devices, anyone):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    other = sim_devices(fleet.prefix, "edge-b")
    wait_for(lambda: fleet.device("edge-b").get("state") == "online", 10, "online")
    seen = fleet.device("edge-b")["last_seen"]
    # The exact message of the report, byte for byte.
    anyone.send(f"{device.root}/config/reported", b'{"version":18446744073709551616,"status":"applied","errors":[]}',
                retain=True)
    other.stats(fps=7.0)
    wait_for(lambda: _stats_fps(fleet, "edge-b") == 7.0, 10, "later messages written")
    assert fleet.device("edge-b")["last_seen"] > seen
    status = _status(fleet)["mqtt"]
    assert status["rejected"] == 1 and status["db_errors"] == 0 and status["backlog"] == 0
    assert fleet.device("edge-a")["config"]["reported_version"] == 0
    assert fleet.get("/readyz").status_code == 200


def _poison(db_url: str) -> None:
    """A trigger that makes the database refuse stats holding the word 'poison', as a real constraint would."""
    conn = connect(db_url)
    with conn.transaction():
        if conn.dialect == "sqlite":
            conn.execute("CREATE TRIGGER poison BEFORE UPDATE OF stats ON devices WHEN NEW.stats LIKE '%poison%' "
                         "BEGIN SELECT RAISE(ABORT, 'poisoned stats'); END")
        else:
            conn.execute("CREATE FUNCTION poison() RETURNS trigger AS $$ BEGIN IF NEW.stats LIKE '%%poison%%' THEN "
                         "RAISE EXCEPTION 'poisoned stats'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
            conn.execute("CREATE TRIGGER poison BEFORE UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION poison()")
    conn.close()


def test_a_message_the_database_refuses_is_dropped_with_its_topic_and_the_rest_is_written(
        fleet_factory, sim_devices, fleet_db_url, caplog):
    fleet = fleet_factory()
    a = sim_devices(fleet.prefix, "edge-a")
    b = sim_devices(fleet.prefix, "edge-b")
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=online").json()["devices"]) == 2, 10, "both online")
    _poison(fleet_db_url)
    caplog.set_level(logging.WARNING, logger="edge_app.fleet_service.ingest")
    a.publish("stats", {"fps": 1.0, "note": "poison"})
    b.stats(fps=2.0)
    wait_for(lambda: _stats_fps(fleet, "edge-b") == 2.0, 10, "the message after the refused one written")
    wait_for(lambda: _status(fleet)["mqtt"]["failed"] == 1, 5, "the refused message counted")
    a.stats(fps=3.0)
    wait_for(lambda: _stats_fps(fleet, "edge-a") == 3.0, 10, "the device's next stats written")
    assert _status(fleet)["mqtt"]["backlog"] == 0 and _stats_fps(fleet, "edge-b") == 2.0
    assert f"{a.root}/stats" in caplog.text and "poisoned stats" in caplog.text
    assert fleet.get("/readyz").status_code == 200


class _Lock:
    """Another client holding the fleet database's write lock (SQLite) or the devices table (PostgreSQL)."""

    def __init__(self, db_url: str):
        if db_url.startswith("sqlite:///"):
            self.raw = sqlite3.connect(db_url[len("sqlite:///"):], isolation_level=None)
            self.raw.execute("BEGIN EXCLUSIVE")
        else:
            import psycopg

            self.raw = psycopg.connect(db_url, autocommit=True)
            self.raw.execute("BEGIN")
            self.raw.execute("LOCK TABLE devices IN EXCLUSIVE MODE")  # reads go on, writes wait

    def release(self) -> None:
        self.raw.execute("ROLLBACK")
        self.raw.close()


def test_an_ingest_that_writes_nothing_shows_in_readyz_until_it_moves_again(fleet_factory, sim_devices, fleet_db_url):
    fleet = fleet_factory(ingest={"stuck_after_s": 1})
    device = sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.device("edge-a").get("state") == "online", 10, "online")
    assert fleet.get("/readyz").status_code == 200
    lock = _Lock(fleet_db_url)
    try:
        device.stats(fps=4.0)
        answer = wait_for(lambda: (lambda r: r.json() if r.status_code == 503 else None)(fleet.get("/readyz")), 10,
                          "readyz 503 while nothing is written")
        assert "fleet database has taken no message" in answer["error"]
        assert _status(fleet)["mqtt"]["stuck_s"] >= 1
    finally:
        lock.release()
    wait_for(lambda: _stats_fps(fleet, "edge-a") == 4.0, 30, "the waiting stats written")
    wait_for(lambda: fleet.get("/readyz").status_code == 200, 10, "ready again")


def test_thousands_of_retained_fake_devices_are_counted_and_never_stored(mosquitto_broker, fleet_factory, sim_devices,
                                                                        anyone):
    prefix = f"fleet{uuid.uuid4().hex[:6]}"
    fake = [(f"{prefix}/fake-{i:04d}/status", json.dumps({"state": "online", "version": "x"}).encode())
            for i in range(3000)]
    anyone.flood(fake, retain=True)  # waiting on the broker before the fleet subscribes
    fleet = fleet_factory(topic_prefix=prefix, devices={"allow": ["shop-*"]})
    sim_devices(prefix, "shop-1")
    wait_for(lambda: _status(fleet)["admission"]["refused_devices"] == 3000, 30, "3,000 fake ids refused")
    admission = _status(fleet)["admission"]
    assert admission["refused_messages"] >= 3000 and admission["devices"] == 1
    wait_for(lambda: fleet.get("/api/v1/devices").json()["total"] == 1, 10, "shop-1 stored")
    assert [d["device_id"] for d in fleet.get("/api/v1/devices").json()["devices"]] == ["shop-1"]
    rollout = fleet.patch("/api/v1/fleet/config", {"devices": "all", "patch": {"model": {"conf_threshold": 0.4}}})
    assert rollout.json()["versions"] == {"shop-1": 1}


def test_admitted_devices_stop_at_devices_max(fleet_factory, anyone):
    fleet = fleet_factory(devices={"max": 5})
    anyone.flood([(f"{fleet.prefix}/edge-{i:02d}/status", b'{"state": "online"}') for i in range(20)])
    wait_for(lambda: _status(fleet)["admission"]["refused_devices"] == 15, 10, "15 ids refused")
    wait_for(lambda: fleet.get("/api/v1/devices").json()["total"] == 5, 10, "5 stored")
    assert [d["device_id"] for d in fleet.get("/api/v1/devices").json()["devices"]] == [
        f"edge-{i:02d}" for i in range(5)]


def test_oversize_messages_are_dropped_and_counted(fleet_factory, sim_devices):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.device("edge-a").get("state") == "online", 10, "online")
    for _ in range(3):  # what took the fleet service from 92 to 373 MB, 800 times over
        device.publish("stats", {"fps": 1.0, "padding": "x" * 250_000}).wait_for_publish(5)
    device.stats(fps=5.0)
    wait_for(lambda: _stats_fps(fleet, "edge-a") == 5.0, 10, "the next small stats written")
    assert _status(fleet)["mqtt"]["oversize"] == 3
    assert "padding" not in json.dumps(fleet.device("edge-a")["stats"])


def test_a_device_over_its_byte_budget_is_cut_off_and_others_are_not(fleet_factory, sim_devices):
    fleet = fleet_factory(ingest={"device_bytes_per_min": 8192, "message_bytes": {"stats": 2048}})
    noisy = sim_devices(fleet.prefix, "edge-noisy")
    quiet = sim_devices(fleet.prefix, "edge-quiet")
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=online").json()["devices"]) == 2, 10, "both online")
    for i in range(20):
        noisy.publish("stats", {"fps": float(i), "padding": "x" * 1500}).wait_for_publish(5)
    quiet.stats(fps=9.0)
    wait_for(lambda: _stats_fps(fleet, "edge-quiet") == 9.0, 10, "the quiet device's stats")
    assert _status(fleet)["admission"]["over_budget"] >= 14
    assert _stats_fps(fleet, "edge-noisy") < 6


def test_junk_under_a_real_device_id_does_not_spend_its_budget(fleet_factory, sim_devices, anyone):
    fleet = fleet_factory(ingest={"device_bytes_per_min": 16384, "junk_bytes_per_min": 4096})
    device = sim_devices(fleet.prefix, "edge-01")
    wait_for(lambda: fleet.device("edge-01").get("state") == "online", 10, "online")
    # 75 KiB of junk under edge-01's id, in pieces of about 64 bytes, four times its budget: not
    # JSON, not an object, a status no appliance sends, an event without an id.
    junk = [b"x" * 64, b"[" + b"1," * 30 + b"1]", json.dumps({"state": "bogus", "pad": "x" * 32}).encode(),
            json.dumps({"type": "new", "after": {"pad": "x" * 30}}).encode()]
    tails = ["stats", "stats", "status", "events"]
    anyone.flood([(f"{device.root}/{tails[i % 4]}", junk[i % 4]) for i in range(1200)])
    device.stats(fps=7.0)
    device.event("new", "ev-after-junk").wait_for_publish(5)
    wait_for(lambda: _stats_fps(fleet, "edge-01") == 7.0, 10, "the real stats after the junk written")
    events = wait_for(lambda: fleet.get("/api/v1/events?device=edge-01").json()["events"] or None, 10, "the real event")
    assert [e["id"] for e in events] == ["ev-after-junk"]
    admission = _status(fleet)["admission"]
    assert admission["over_budget"] == 0
    assert admission["junk_messages"] == 1200 and admission["junk_bytes"] >= 70_000
    assert admission["junk_over_budget"] >= 1100 and admission["junk_devices"] == ["edge-01"]
    assert _status(fleet)["mqtt"]["rejected"] == 1200


def _strict_json(text: str):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in an answer of the fleet"))


def test_non_finite_numbers_and_far_future_events_are_refused(fleet_factory, sim_devices, anyone, fleet_db_url):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-01")
    wait_for(lambda: fleet.device("edge-01").get("state") == "online", 10, "online")
    after = {"camera_id": "cam1", "label": "person", "track_id": 1, "score": 0.8, "start_time": time.time()}
    for event_id, raw in (("ev-1e400", b'"score": 1e400'), ("ev-nan", b'"score": NaN'),
                          ("ev-inf", b'"score": -Infinity')):
        body = json.dumps({"type": "new", "after": {**after, "id": event_id, "score": 0}}).encode()
        anyone.send(f"{device.root}/events", body.replace(b'"score": 0', raw))
    anyone.send(f"{device.root}/stats", b'{"fps": 1e400}')
    device.event("new", "ev-future", start_time=time.time() + 2 * 86400).wait_for_publish(5)
    device.event("new", "ev-real").wait_for_publish(5)
    device.stats(fps=4.0)
    wait_for(lambda: _stats_fps(fleet, "edge-01") == 4.0, 10, "the real stats")
    events = wait_for(lambda: _strict_json(fleet.get("/api/v1/events").text)["events"] or None, 10, "the real event")
    assert [e["id"] for e in events] == ["ev-real"]
    assert _status(fleet)["mqtt"]["rejected"] == 5
    _strict_json(fleet.get("/api/v1/devices/edge-01").text)


def test_a_non_finite_number_stored_before_is_answered_as_null(fleet_factory, sim_devices, fleet_db_url):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-01")
    device.event("new", "ev-old").wait_for_publish(5)
    wait_for(lambda: fleet.get("/api/v1/events").json()["events"], 10, "the event stored")
    conn = connect(fleet_db_url)  # what an older version of the fleet stored from "score": 1e400
    with conn.transaction():
        conn.execute("UPDATE events SET body = ?", ('{"id": "ev-old", "camera_id": "cam1", "score": Infinity}',))
    conn.close()
    events = _strict_json(fleet.get("/api/v1/events").text)["events"]
    assert events == [{"id": "ev-old", "camera_id": "cam1", "score": None}]
