"""A client that connects with the appliance's (or the fleet service's) client id takes its session
over; both reconnect and take turns. On a real Mosquitto that does not bind client ids to logins
(anonymous here, as many home brokers are), the loop is noticed: a warning in the appliance's
status, /metrics and selftest, and in the fleet service's status."""
from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Iterator

import pytest

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt import MqttPublisher
from edge_app.mqtt_takeover import TAKEOVER_CLOSES, TAKEOVER_WINDOW_S, TakeoverWatch
from tests.support.fleet import start_fleet
from tests.support.takeover import TAKEN_OVER_S, Thief
from testkit.waiting import wait_for

@contextmanager
def connected_publisher(broker, device_id: str) -> Iterator[MqttPublisher]:
    """An appliance's publisher on ``broker`` that reconnects within a second, connected; stopped after."""
    publisher = MqttPublisher(MQTTConfig(host=broker.host, port=broker.port, keepalive=5), device_id, "1.0",
                              reconnect_min_delay_s=0.5, reconnect_max_delay_s=1)
    publisher.start()
    try:
        wait_for(lambda: publisher.connected, 15, "the publisher to connect")
        yield publisher
    finally:
        publisher.stop(timeout_s=2)


@pytest.fixture
def thieves():
    started = []

    def start(broker, client_id: str) -> Thief:
        started.append(Thief(broker, client_id))
        return started[-1]

    yield start
    for thief in started:
        thief.stop()


def test_a_takeover_loop_is_three_closes_by_the_broker_within_two_minutes():
    watch = TakeoverWatch("edge-app-dev1")
    assert not watch.closed(0.0, "Keep alive timeout")  # paho gave up on a silent broker: not the broker's doing
    assert not watch.closed(1.0, "Unspecified error") and not watch.closed(2.0, "Session taken over")
    assert watch.report(2.0).warning is None
    assert watch.closed(3.0, "Unspecified error")
    report = watch.report(3.0)
    assert (report.closes_total, report.closes_in_window) == (TAKEOVER_CLOSES, TAKEOVER_CLOSES)
    assert "'edge-app-dev1'" in report.warning and "use_username_as_clientid" in report.warning
    # Quiet for the window: the warning goes, the total stays.
    later = watch.report(3.0 + TAKEOVER_WINDOW_S + 1)
    assert (later.warning, later.closes_in_window, later.closes_total) == (None, 0, TAKEOVER_CLOSES)


def test_a_broker_restart_is_no_takeover(mosquitto_factory):
    broker = mosquitto_factory()
    with connected_publisher(broker, "dev-restart") as publisher:
        broker.stop()
        broker.start()
        wait_for(lambda: publisher.connected, 30, "the publisher to connect again")
        stats = publisher.stats()
        assert stats["closed_by_broker"] == 1 and stats["takeover_warning"] is None


def test_the_appliance_notices_another_client_taking_its_session_over(mosquitto_factory, thieves):
    broker = mosquitto_factory()
    with connected_publisher(broker, "dev-victim") as publisher:
        assert publisher.stats()["takeover_warning"] is None
        thieves(broker, publisher.client_id)
        warning = wait_for(lambda: publisher.stats()["takeover_warning"], TAKEN_OVER_S, "the takeover warning")
        assert repr(publisher.client_id) in warning
        assert publisher.stats()["closed_by_broker"] >= TAKEOVER_CLOSES


def test_the_fleet_service_notices_another_client_taking_its_session_over(mosquitto_factory, thieves, tmp_path):
    broker = mosquitto_factory()
    client_id = f"edge-app-fleet-{uuid.uuid4().hex[:6]}"
    fleet = start_fleet(broker, f"sqlite:///{tmp_path / 'fleet.db'}", mqtt={"client_id": client_id})
    try:
        assert fleet.get("/api/v1/status").json()["mqtt"]["takeover_warning"] is None
        thieves(broker, client_id)
        status = wait_for(lambda: (lambda mqtt: mqtt if mqtt["takeover_warning"] else None)(
            fleet.get("/api/v1/status").json()["mqtt"]), TAKEN_OVER_S, "the fleet's takeover warning")
        assert repr(client_id) in status["takeover_warning"] and status["closed_by_broker"] >= TAKEOVER_CLOSES
    finally:
        fleet.stop()

