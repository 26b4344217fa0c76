"""Devices leave the inventory: DELETE /api/v1/devices/<id> (admin only), and ids never online are forgotten.

A real Mosquitto, a real fleet service over real HTTP, SQLite and PostgreSQL.
"""
from __future__ import annotations

import json
import time
import uuid

import paho.mqtt.client as mqtt
import pytest
import requests
from paho.mqtt.enums import CallbackAPIVersion

from edge_app.fleet_service.db import connect
from testkit.waiting import wait_for

TOKEN = "fleet-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def anyone(mosquitto_broker):
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"anyone-{uuid.uuid4().hex[:8]}")
    client.connect(mosquitto_broker.host, mosquitto_broker.port)
    client.loop_start()
    yield lambda topic, body: client.publish(topic, json.dumps(body), qos=1).wait_for_publish(10)
    client.disconnect()
    client.loop_stop()


def _ids(fleet) -> list:
    return [d["device_id"] for d in fleet.get("/api/v1/devices", headers=AUTH).json()["devices"]]


def test_fake_ids_that_fill_devices_max_can_be_removed(fleet_factory, sim_devices, anyone, fleet_db_url):
    fleet = fleet_factory(api={"token": TOKEN}, devices={"max": 3})
    for i in range(3):
        anyone(f"{fleet.prefix}/fake-{i}/stats", {"fps": 1.0})
        anyone(f"{fleet.prefix}/fake-{i}/events", {"type": "new", "after": {"id": f"ev-{i}", "start_time": time.time()}})
    wait_for(lambda: _ids(fleet) == ["fake-0", "fake-1", "fake-2"], 10, "three fake ids stored")
    real = sim_devices(fleet.prefix, "shop-1")
    wait_for(lambda: fleet.get("/api/v1/status", headers=AUTH).json()["admission"]["refused_devices"] == 1, 10,
             "the real device refused: devices.max is full")

    assert requests.delete(f"{fleet.url}/api/v1/devices/fake-1", timeout=10).status_code == 401
    assert requests.delete(f"{fleet.url}/api/v1/devices/nobody", headers=AUTH, timeout=10).status_code == 404
    assert requests.delete(f"{fleet.url}/api/v1/devices/a.b", headers=AUTH, timeout=10).status_code == 400
    for fake in ("fake-0", "fake-1"):
        response = requests.delete(f"{fleet.url}/api/v1/devices/{fake}", headers=AUTH, timeout=10)
        assert response.status_code == 200 and response.json() == {"deleted": fake}
    assert fleet.get("/api/v1/devices/fake-1", headers=AUTH).status_code == 404
    conn = connect(fleet_db_url)
    with conn.reading():
        assert conn.query("SELECT device_id FROM events ORDER BY device_id") == [("fake-2",)]
    conn.close()

    real.stats(fps=3.0)
    wait_for(lambda: "shop-1" in _ids(fleet), 10, "the real device admitted in the freed place")
    assert _ids(fleet) == ["fake-2", "shop-1"]


def test_devices_never_online_are_forgotten_after_a_while(fleet_factory, sim_devices, anyone):
    fleet = fleet_factory(api={"token": TOKEN}, devices={"max": 4, "forget_never_online_after_s": 2})
    real = sim_devices(fleet.prefix, "shop-1")
    for i in range(2):
        anyone(f"{fleet.prefix}/fake-{i}/stats", {"fps": 1.0})
    anyone(f"{fleet.prefix}/fake-2/status", {"state": "offline"})
    wait_for(lambda: _ids(fleet) == ["fake-0", "fake-1", "fake-2", "shop-1"], 10, "four devices stored")
    wait_for(lambda: _ids(fleet) == ["shop-1"], 15, "the ids never online forgotten")
    assert fleet.get("/api/v1/status", headers=AUTH).json()["admission"]["devices"] == 1
    time.sleep(3)  # the real device, online since it connected, is kept
    real.stats(fps=2.0)
    anyone(f"{fleet.prefix}/fake-9/stats", {"fps": 1.0})
    wait_for(lambda: _ids(fleet) == ["fake-9", "shop-1"], 10, "a new id admitted in a freed place")
