"""Stall detection of the MQTT link and the callback guard, with the time passed in."""
from __future__ import annotations

import logging

import pytest

from edge_app.mqtt.callback_guard import CallbackGuard
from edge_app.mqtt.link_stall_watch import LinkActivity, LinkTracker, assess_link, readiness_reason, stall_after_s_for

STALL_S = 60.0


def _activity(running=True, loop_alive=True, connected=True, waiting=3, waiting_since_s=0.0):
    return LinkActivity(running, loop_alive, connected, waiting, waiting_since_s)


@pytest.mark.parametrize("activity, now_s, stalled", [
    (_activity(), 59.0, False),  # waiting, but not for long yet
    (_activity(), 61.0, True),
    (_activity(waiting=0, waiting_since_s=None), 1000.0, False),  # nothing to send: silence is fine
    (_activity(connected=False), 1000.0, False),  # the broker is away: paho reconnects, no stall
    (_activity(running=False, loop_alive=False), 1000.0, False),  # stopped or MQTT off
    (_activity(loop_alive=False, waiting=0, waiting_since_s=None), 0.0, True),  # the network thread is gone
    (_activity(loop_alive=False, connected=False), 0.0, True),
])
def test_assess_link(activity, now_s, stalled):
    health = assess_link(activity, now_s, STALL_S)
    assert health.stalled is stalled
    assert (health.reason is not None) is stalled
    assert (readiness_reason(health) is not None) is stalled


def test_reasons_name_what_stopped():
    assert assess_link(_activity(loop_alive=False), 0.0, STALL_S).reason == "the MQTT network thread has stopped"
    assert assess_link(_activity(), 75.0, STALL_S).reason == "no MQTT traffic for 75 s while 3 messages wait for the broker"


def test_stall_after_is_twice_the_keepalive():
    assert stall_after_s_for(30) == 60.0


def test_the_tracker_restarts_the_clock_on_traffic_and_forgets_it_when_nothing_waits():
    tracker = LinkTracker()
    assert tracker.observe(0, 10.0) is None
    tracker.moved(11.0)  # traffic while nothing waits starts no clock
    assert tracker.observe(2, 12.0) == 12.0
    assert tracker.observe(2, 50.0) == 12.0
    tracker.moved(55.0)
    assert tracker.observe(1, 56.0) == 55.0
    assert tracker.observe(0, 57.0) is None


def test_the_guard_counts_every_failure_and_logs_once_a_minute_with_what_it_left_out(caplog):
    now = [0.0]
    guard = CallbackGuard(log_every_s=60.0, clock=lambda: now[0])

    def boom(*_args):
        raise RecursionError("deep")

    handler = guard.wrap("on_message", boom)
    with caplog.at_level(logging.ERROR, logger="edge_app.mqtt.callback_guard"):
        for step in range(10):
            now[0] = step
            assert handler(None, None, None) is None
        now[0] = 61.0
        handler()
    assert guard.errors() == {"on_message": 11}
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert messages[0].startswith("MQTT on_message handler failed (1 failures so far): RecursionError: deep")
    assert "(11 failures so far, 9 more not logged since the last report)" in messages[1]


def test_the_guard_installs_every_callback_on_the_client():
    class Client:
        pass

    client, guard = Client(), CallbackGuard()
    calls = []
    guard.install(client, {"on_connect": lambda *a: calls.append(a), "on_publish": lambda *a: 1 / 0})
    client.on_connect(1, 2)
    client.on_publish(3)
    assert calls == [(1, 2)] and guard.errors() == {"on_publish": 1}
