"""The fleet agent's rules, in-process: versions once and in order, the saved state, the broker's limits.

The change path is the real one (``ConfigChanges`` with the machine checks, the real model file),
in front of the in-memory service the API tests use; reports are collected as published.
"""
from __future__ import annotations

import json
import time

import pytest

from edge_app.config.file import load_config, parse_config, save_config
from edge_app.config_change.changes import ConfigRefused, Origin
from edge_app.fleet_agent.desired.gate import DesiredGate
from edge_app.fleet_agent.desired.intake import BURST
from edge_app.fleet_agent.desired.refusal_reports import REPORT_EVERY_S
from edge_app.fleet_agent.agent import MAX_VERSION_STEP, FleetAgent
from edge_app.fleet_agent.desired.versions import DesiredVersionStore, state_path_for
from edge_app.mqtt.payloads import config_desired_payload, encode
from edge_app.mqtt.anonymous_probe import AnonymousProbe, ProbeOutcome
from edge_app.fleet_protocol.desired_signature import keyed_digest, sign_desired, signed_desired
from tests.api.in_memory_service import InMemoryService, change_path, saving_change_path

KEY = "shared-desired-key-0123456789abcdef"
EPOCH, NEW_EPOCH, OLDER_EPOCH = "a1" * 16, "b2" * 16, "c3" * 16


@pytest.fixture
def setup(tmp_path, model_path):
    config_path = tmp_path / "config.yaml"
    config = parse_config({"device_id": "dev", "cameras": [{"id": "cam", "source": "test://bars"}],
                           "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                           "api": {"allow_unsafe_sources": True},
                           "fleet": {"remote_config": True, "desired_key": KEY}})
    save_config(config, config_path)
    service = InMemoryService(config, config_path)
    changes = saving_change_path(service)
    reports = []

    def agent(**options):
        return FleetAgent(changes, DesiredVersionStore(state_path_for(config_path)), reports.append, **options)

    return config_path, service, changes, reports, agent


def now_ms() -> int:
    return int(time.time() * 1000)


def desired(version, patch, key=KEY, device="dev", epoch=EPOCH, issued_ms=None):
    """A desired message as the fleet service sends it: signed for ``device`` with ``key``, in ``epoch``."""
    return encode(signed_desired(key, device, epoch, now_ms() if issued_ms is None else issued_ms, version, patch))


def threshold(value):
    return {"model": {"conf_threshold": value}}


def test_versions_are_acted_on_once_and_in_order(setup):
    config_path, service, _, reports, make_agent = setup
    agent = make_agent()
    steps = [(2, threshold(0.3), "applied"), (1, threshold(0.4), None), (2, threshold(0.5), None),
             (3, threshold(7), "rejected"), (3, threshold(0.6), None), (4, threshold(0.7), "applied")]
    for version, patch, outcome in steps:
        report = agent.handle(desired(version, patch))
        assert (report.status if report else None) == outcome, (version, patch)
    assert [(r["version"], r["status"]) for r in reports] == [(2, "applied"), (3, "rejected"), (4, "applied")]
    assert reports[1]["errors"][0]["loc"] == "model.conf_threshold"
    assert service.applied.current_config().model.conf_threshold == 0.7 == load_config(config_path).model.conf_threshold
    assert json.loads(state_path_for(config_path).read_text())["version"] == 4

    # After a restart: the saved report is published again, and version 4 is known to be done.
    restarted = make_agent()
    assert restarted.version == 4
    restarted.start()
    restarted.stop()
    assert reports[-1] == reports[2]
    assert restarted.handle(desired(4, threshold(0.2))) is None


@pytest.mark.parametrize("content", ["{", "[]", '{"version": -1}', '{"version": "3"}', '{"version": 3, "reported": {"x": 1}}'])
def test_an_unreadable_state_file_starts_from_nothing(setup, content):
    config_path, _, _, _, make_agent = setup
    state_path_for(config_path).write_text(content)
    agent = make_agent()
    assert agent.version == 0
    assert agent.handle(desired(1, threshold(0.3))).status == "applied"


def test_a_failed_state_save_still_applies_and_reports(setup, tmp_path):
    _, service, changes, reports, _ = setup
    agent = FleetAgent(changes, DesiredVersionStore(tmp_path / "missing-dir" / "state.json"), reports.append)
    assert agent.handle(desired(1, threshold(0.3))).status == "applied"
    assert (agent.version, reports[-1]["version"], service.applied.current_config().model.conf_threshold) == (1, 1, 0.3)


@pytest.mark.parametrize("camera", [
    {"id": "evil", "source": "gst:filesrc location=/etc/passwd ! appsink"},
    {"id": "evil", "source": "/etc/passwd"},
    {"id": "evil", "source": "csi://0"},
    {"id": "evil", "source": "file:/etc/passwd"},  # FFmpeg's file protocol: judged by the file it opens
    {"id": "evil", "source": "test://noise?width=8192&height=8192&fps=1000"},  # ~760 MB of frames
    {"id": "evil", "source": "test://bars", "enabled": False},  # synthetic sources are never the broker's to add
])
def test_the_broker_never_brings_unsafe_sources_even_when_the_file_allows_them(setup, camera):
    """api.allow_unsafe_sources: true trusts the local API; R/config/desired stays limited."""
    config_path, service, changes, reports, make_agent = setup
    before = config_path.read_bytes()
    cameras = [{"id": "cam", "source": "test://bars"}, camera]
    report = make_agent().handle(desired(1, {"cameras": cameras}))
    assert report.status == "rejected" and [e.loc for e in report.errors] == ["cameras.1.source"]
    assert config_path.read_bytes() == before and len(service.applied.current_config().cameras) == 1
    # The same change through the API passes the policy (it may still fail on this machine).
    try:
        changes.patch({"cameras": cameras}, Origin.API)
    except ConfigRefused as err:
        assert "allow_unsafe_sources" not in json.dumps([p.as_dict() for p in err.problems])


def test_queued_messages_are_applied_in_arrival_order_on_the_agents_thread(setup):
    _, service, _, reports, make_agent = setup
    agent = make_agent().start()
    try:
        for version in range(1, BURST + 1):  # as many at once as the intake's bucket takes
            agent.on_desired(desired(version, threshold(round(0.01 * version, 2))))
        agent.on_desired(b"")  # an emptied retained message asks for nothing
        assert agent.wait_idle(30)
    finally:
        agent.stop()
    assert [r["version"] for r in reports] == list(range(1, BURST + 1))
    assert set(service.applied.apply_threads) == {"fleet:config"}
    assert service.applied.current_config().model.conf_threshold == round(0.01 * BURST, 2)


# -- who may configure the appliance (docs/fleet.md, "Who may configure an appliance": the broker is not trusted) ---------

def test_the_issue_attack_signed_or_not_never_changes_the_api_token(setup):
    """The retained ``{"version":1,"patch":{"api":{"token":...}}}`` from the issue, unsigned then signed."""
    config_path, service, _, reports, make_agent = setup
    before = config_path.read_bytes()
    attack = {"api": {"token": "attacker-owned-token-1234567890"}}
    agent = make_agent()
    unsigned = agent.handle(encode(config_desired_payload(1, attack)))
    assert (unsigned.status, unsigned.version, unsigned.errors[0].loc) == ("rejected", None, "sig")
    signed = agent.handle(desired(2, attack))  # even the fleet service may not touch api.*
    assert signed.status == "rejected" and [e.loc for e in signed.errors] == ["api.token"]
    assert config_path.read_bytes() == before and service.applied.current_config().api.token is None
    assert "attacker-owned" not in json.dumps(reports)


@pytest.mark.parametrize("message", [
    encode(config_desired_payload(5, threshold(0.3))),                                   # unsigned
    desired(5, threshold(0.3), key="another-key-0123456789abcdef0123"),                    # another key
    desired(5, threshold(0.3), device="other"),                                          # signed for another device
    encode({**config_desired_payload(5, threshold(0.3)), "epoch": EPOCH, "issued_at_ms": 1,
            "sig": sign_desired(KEY, "dev", EPOCH, 1, 5, threshold(0.9))}),  # another patch
    encode({**config_desired_payload(5, threshold(0.3)), "epoch": EPOCH, "issued_at_ms": 2,
            "sig": sign_desired(KEY, "dev", EPOCH, 1, 5, threshold(0.3))}),  # another issue time
    encode({**config_desired_payload(5, threshold(0.3)), "epoch": NEW_EPOCH, "issued_at_ms": 1,
            "sig": sign_desired(KEY, "dev", EPOCH, 1, 5, threshold(0.3))}),  # another epoch
    # version 1 of the signature: no epoch, no issue time (a message captured before them)
    encode({**config_desired_payload(5, threshold(0.3)), "sig": "hmac-sha256:" + keyed_digest(
        KEY, b"edge-app desired v1\ndev\n5\n" + json.dumps(threshold(0.3), separators=(",", ":")).encode())}),
    encode({"version": 2 ** 53, "patch": 5}),                                              # malformed, cannot be checked
    encode({"version": 2 ** 53, "patch": {}, "sig": "hmac-sha256:" + "0" * 64}),
])
def test_a_message_without_a_valid_signature_is_refused_before_anything_and_moves_no_version(setup, message):
    config_path, service, _, reports, make_agent = setup
    before = config_path.read_bytes()
    agent = make_agent()
    report = agent.handle(message)
    assert (report.status, report.version, report.errors[0].loc) == ("rejected", None, "sig")
    assert reports[-1]["version"] is None and reports[-1]["status"] == "rejected"
    assert agent.version == 0 and not state_path_for(config_path).exists()
    assert config_path.read_bytes() == before and service.applied.apply_calls == 0
    assert agent.gate.report().refused == 1
    # The real fleet's version 1 still goes through afterwards.
    assert agent.handle(desired(1, threshold(0.3))).status == "applied"


def test_remote_configuration_switched_off_refuses_even_signed_messages(setup):
    _, service, changes, _, make_agent = setup
    changes.patch({"fleet": {"remote_config": False}}, Origin.API)
    report = make_agent().handle(desired(1, threshold(0.3)))
    assert (report.status, report.version, report.errors[0].loc) == ("rejected", None, "fleet.remote_config")
    assert service.applied.current_config().model.conf_threshold == 0.25


def test_a_version_may_not_jump_more_than_the_bounded_step(setup):
    config_path, _, _, reports, make_agent = setup
    agent = make_agent()
    assert agent.handle(desired(MAX_VERSION_STEP, threshold(0.3))).status == "applied"
    pinned = agent.handle(desired(2 ** 53, threshold(0.4)))
    assert (pinned.status, pinned.version, pinned.errors[0].loc) == ("rejected", 2 ** 53, "version")
    assert "fleet-reset" in pinned.errors[0].msg
    assert agent.version == MAX_VERSION_STEP == json.loads(state_path_for(config_path).read_text())["version"]
    assert agent.handle(desired(2 * MAX_VERSION_STEP + 1, threshold(0.4))).status == "rejected"
    assert agent.handle(desired(MAX_VERSION_STEP + 1, threshold(0.4))).status == "applied"


def test_the_reset_forgets_the_version_so_a_fleet_that_started_over_is_heard(setup):
    config_path, _, _, _, make_agent = setup
    make_agent().handle(desired(40, threshold(0.3)))
    store = DesiredVersionStore(state_path_for(config_path))
    assert make_agent().handle(desired(1, threshold(0.4))) is None  # acted on already
    assert store.reset() == 40 and store.reset() is None
    assert make_agent().handle(desired(1, threshold(0.4), epoch=NEW_EPOCH)).status == "applied"


def test_a_captured_message_cannot_roll_back_a_reset_appliance(setup):
    config_path, service, _, reports, make_agent = setup
    agent = make_agent()
    long_ago = now_ms() - 3_600_000
    older = desired(12, threshold(0.2), epoch=OLDER_EPOCH, issued_ms=long_ago)  # captured from an earlier fleet
    captured = desired(9, threshold(0.3), issued_ms=long_ago + 1000)
    assert agent.handle(captured).status == "applied"
    # The fleet started over: fleet-reset here, POST .../config/reset there, and its new epoch counts from 1.
    DesiredVersionStore(state_path_for(config_path)).reset()
    agent = make_agent()
    assert agent.handle(desired(1, threshold(0.5), epoch=NEW_EPOCH)).status == "applied"
    for replay, loc in ((captured, "epoch"), (older, "issued_at_ms")):
        report = agent.handle(replay)
        assert (report.status, report.version, report.errors[0].loc) == ("rejected", None, loc)
    assert service.applied.current_config().model.conf_threshold == 0.5
    assert agent.version == 1 and agent.handle(desired(2, threshold(0.6), epoch=NEW_EPOCH)).status == "applied"
    assert make_agent().version == 2 and "fleet-reset" in reports[-2]["errors"][0]["msg"]


def test_a_new_epoch_issued_later_is_followed_and_older_epochs_are_not(setup):
    _, service, _, _, make_agent = setup
    agent = make_agent()
    start = now_ms()
    assert agent.handle(desired(9, threshold(0.3), issued_ms=start - 5000)).status == "applied"
    # A fleet with a new database (a new epoch) is heard without touching the appliance...
    assert agent.handle(desired(1, threshold(0.4), epoch=NEW_EPOCH, issued_ms=start)).status == "applied"
    # ...and the old fleet's messages, issued before, are replays now.
    report = agent.handle(desired(10, threshold(0.9), issued_ms=start - 4000))
    assert (report.status, report.version, report.errors[0].loc) == ("rejected", None, "epoch")
    report = agent.handle(desired(2, threshold(0.9), epoch=NEW_EPOCH, issued_ms=start + 2 * 86_400_000))
    assert (report.status, report.version, report.errors[0].loc) == ("rejected", None, "issued_at_ms")
    assert service.applied.current_config().model.conf_threshold == 0.4


class _Probe:
    def __init__(self, outcome):
        self.outcome, self.calls = outcome, 0

    def __call__(self, mqtt, device_id):
        self.calls += 1
        return AnonymousProbe(self.outcome, "as the test says", mqtt.host, mqtt.port)


@pytest.mark.parametrize("outcome, username, status, loc", [
    (ProbeOutcome.REFUSED, "dev", "applied", None),
    (ProbeOutcome.ACCEPTED, "dev", "rejected", "mqtt"),
    (ProbeOutcome.UNKNOWN, "dev", "rejected", "mqtt"),
    (ProbeOutcome.REFUSED, None, "rejected", "fleet.desired_key"),
])
def test_without_a_key_only_a_broker_that_refuses_anonymous_clients_is_trusted(tmp_path, model_path, outcome, username, status, loc):
    config_path = tmp_path / "config.yaml"
    config = parse_config({"device_id": "dev", "cameras": [{"id": "cam", "source": "test://bars"}],
                           "model": {"path": str(model_path)},
                           "mqtt": {"host": "127.0.0.1", "username": username, "password": "pw" if username else None},
                           "fleet": {"remote_config": True}})
    save_config(config, config_path)
    service = InMemoryService(config, config_path)
    changes = change_path(service)
    probe = _Probe(outcome)
    gate = DesiredGate(changes.current, probe=probe)
    agent = FleetAgent(changes, DesiredVersionStore(state_path_for(config_path)), lambda body: None, gate=gate)
    report = agent.handle(encode(config_desired_payload(1, threshold(0.3))))
    assert report.status == status
    assert (report.errors[0].loc if report.errors else None) == loc
    assert agent.version == (1 if status == "applied" else 0)
    gate.probe_broker()  # as the appliance does at start, whatever remote configuration says
    status_report = gate.report()
    assert probe.calls == (2 if outcome is ProbeOutcome.UNKNOWN else 1)  # a definitive answer is kept
    assert status_report.enabled and status_report.broker_anonymous is {ProbeOutcome.ACCEPTED: True, ProbeOutcome.REFUSED: False}.get(outcome)
    assert bool(status_report.warnings) == (status == "rejected")


def test_a_flood_of_unsigned_messages_is_answered_by_one_report_per_interval(setup):
    _, service, _, reports, make_agent = setup
    agent = make_agent().start()
    try:
        for _ in range(5000):
            agent.on_desired(b"{}")
        assert agent.wait_idle(30)
        assert len(reports) == 1 and reports[0]["version"] is None and reports[0]["refused"] >= 1
        deadline = time.monotonic() + REPORT_EVERY_S + 5
        while len(reports) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        agent.stop()
    assert len(reports) == 2 and sum(r["refused"] for r in reports) == agent.gate.report().refused == 5000
    assert service.applied.apply_calls == 0


def test_refusals_while_the_link_is_down_are_reported_once_it_is_up_none_lost(setup):
    """A report made offline would wait in the outbox, where a later retained R/config/reported
    replaces it: the refusals it stood for would never add up. So none is made while the link is
    down; the count goes on, and the first report after it comes back tells of all of them."""
    _, _, _, reports, make_agent = setup
    link = {"up": False}
    agent = make_agent(link_up=lambda: link["up"]).start()
    try:
        for _ in range(3000):
            agent.on_desired(b"{}")
        assert agent.wait_idle(30)
        time.sleep(1.5)  # the agent looks at the link about once a second
        assert reports == []
        link["up"] = True
        deadline = time.monotonic() + 5
        while not reports and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        agent.stop()
    assert [r["refused"] for r in reports] == [3000] == [agent.gate.report().refused]
