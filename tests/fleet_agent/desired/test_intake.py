"""The cheap checks in front of the fleet agent: the token bucket, the signature before parsing,
refusal reports coalesced per interval. Time is a test clock; the messages are real desired
messages, signed or not with the real signature code."""
from __future__ import annotations

import json

import pytest

from edge_app.config.file import Problem, parse_config
from edge_app.fleet_agent.desired.config import MAX_DESIRED_BYTES
from edge_app.fleet_agent.desired.gate import DesiredGate
from edge_app.fleet_agent.desired.intake import DesiredIntake, TokenBucket
from edge_app.fleet_protocol.desired_signature import carries_signature, signed_desired
from edge_app.fleet_agent.desired.refusal_reports import RefusalReports

KEY = "intake-desired-key-0123456789abcdef0123"


class Clock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def test_the_bucket_takes_a_burst_then_the_rate():
    clock = Clock()
    bucket = TokenBucket(rate_per_s=2.0, burst=3, clock=clock)
    assert [bucket.take() for _ in range(5)] == [True, True, True, False, False]
    clock.now_s += 0.5
    assert [bucket.take(), bucket.take()] == [True, False]
    clock.now_s += 100
    assert bucket.full() and sum(bucket.take() for _ in range(10)) == 3


def test_the_intake_drops_big_and_fast_messages_unread_and_asks_for_a_refetch_once():
    clock = Clock()
    intake = DesiredIntake(rate_per_s=1.0, burst=2, clock=clock)
    assert "bytes" in intake.refusal(b"x" * (MAX_DESIRED_BYTES + 1)).msg  # no token spent on it
    assert [intake.refusal(b"{}") for _ in range(2)] == [None, None]
    assert "a second" in intake.refusal(b"{}").msg
    assert not intake.refetch_due()  # the bucket is not full yet
    clock.now_s += 2
    assert intake.refetch_due() and not intake.refetch_due()


def test_refusals_are_reported_once_per_interval_with_their_count():
    clock = Clock()
    reports = RefusalReports(interval_s=5.0, clock=clock)
    assert reports.take_due() is None and reports.seconds_until_due() is None
    reports.note(Problem("sig", "first"))
    first = reports.take_due()
    assert (first.problem.msg, first.refused) == ("first", 1)
    for i in range(10_000):
        reports.note(Problem("sig", f"more {i}"))
    assert reports.take_due() is None and reports.seconds_until_due() == 5.0
    clock.now_s += 5
    coalesced = reports.take_due()
    assert (coalesced.problem.msg, coalesced.refused) == ("more 9999", 10_000)
    assert reports.take_due() is None and reports.seconds_until_due() is None


def test_refusals_are_logged_once_per_log_interval_with_the_count_left_out(caplog):
    clock = Clock()
    reports = RefusalReports(interval_s=5.0, log_every_s=60.0, clock=clock)
    with caplog.at_level("WARNING", logger="edge_app.fleet_agent.desired.refusal_reports"):
        for i in range(100):
            reports.note(Problem("sig", f"refused {i}"))
        clock.now_s += 60
        reports.note(Problem("sig", "after a minute"))
    assert [record.getMessage() for record in caplog.records] == [
        "desired configuration refused: sig: refused 0",
        "desired configuration refused: sig: after a minute (99 more refused since the last note)"]


def test_a_message_without_a_signature_is_refused_before_parsing_and_a_signed_one_is_not():
    config = parse_config({"device_id": "dev", "cameras": [{"id": "cam", "source": "test://bars"}],
                           "model": {"path": "model.onnx"}, "mqtt": {"enabled": False},
                           "fleet": {"remote_config": True, "desired_key": KEY}})
    gate = DesiredGate(lambda: config)
    patch = {"model": {"conf_threshold": 0.3}}
    signed = json.dumps(signed_desired(KEY, "dev", "e" * 32, 1, 1, patch)).encode()
    assert gate.refusal_before_parsing(signed) is None
    unsigned = json.dumps({"version": 1, "patch": patch}).encode()
    for payload in (unsigned, b"{}", b"[" * 200_000, unsigned.replace(b"}}", b'}, "sig": "hmac-sha256:ABC"}'),
                    json.dumps({"version": 1, "patch": patch, "sig": "HMAC-SHA256:" + "a" * 64}).encode()):
        assert gate.refusal_before_parsing(payload).loc == "sig"


@pytest.mark.parametrize("payload, carries", [
    (b'{"sig":"hmac-sha256:' + b"0" * 64 + b'"}', True),
    (b'{"sig": "hmac-sha256:' + b"a" * 64 + b'", "version": 1}', True),
    (b'{"sig":"hmac-sha256:' + b"0" * 63 + b'"}', False),
    (b'{"\\u0073ig":"hmac-sha256:' + b"0" * 64 + b'"}', False),
    (b'{"signature":"hmac-sha256:' + b"0" * 64 + b'"}', False),
])
def test_carries_signature(payload, carries):
    assert carries_signature(payload) is carries
