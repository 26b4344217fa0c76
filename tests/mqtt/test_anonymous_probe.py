"""The anonymous probe against real brokers: one that welcomes anyone, one with a password file, none,
and ones that refuse the probe for a reason that says nothing about logins."""
import socket
import threading
import time

import pytest

from edge_app.config.schema import MQTTConfig
from edge_app.mqtt.anonymous_probe import ProbeOutcome, probe_anonymous, probe_client_id
from testkit.net import free_port


def test_an_open_broker_is_found_open(mosquitto_factory):
    broker = mosquitto_factory()
    probe = probe_anonymous(MQTTConfig(host=broker.host, port=broker.port), "dev1")
    assert probe.outcome is ProbeOutcome.ACCEPTED and probe.accepted


def test_a_broker_with_a_password_file_refuses_and_the_appliances_login_is_not_used(mosquitto_factory):
    broker = mosquitto_factory(users={"dev1": "dev1-Pa55"})
    config = MQTTConfig(host=broker.host, port=broker.port, username="dev1", password="dev1-Pa55")
    probe = probe_anonymous(config, "dev1")
    assert probe.outcome is ProbeOutcome.REFUSED and not probe.accepted
    assert "without a login" in probe.detail


def test_no_broker_is_unknown_not_refused_and_quick():
    started = time.monotonic()
    probe = probe_anonymous(MQTTConfig(host="127.0.0.1", port=free_port()), "dev1", timeout_s=2)
    assert probe.outcome is ProbeOutcome.UNKNOWN and time.monotonic() - started < 3


@pytest.mark.parametrize("return_code, words", [(2, "identifier"), (3, "unavailable")])
def test_a_refusal_that_is_not_about_logins_is_unknown_not_refused(return_code, words):
    # Mosquitto answers every refusal of an anonymous client with "not authorised"; other brokers
    # refuse for reasons that say nothing about logins: a client id they do not take (2), being
    # unavailable (3). A listener that answers the CONNECT so stands for them.
    with _ConnackServer(return_code) as server:
        probe = probe_anonymous(MQTTConfig(host="127.0.0.1", port=server.port, username="dev1", password="pw"), "dev1")
    assert probe.outcome is ProbeOutcome.UNKNOWN and not probe.accepted, probe
    assert words in probe.detail.lower()


class _ConnackServer:
    """Accepts one MQTT connection and answers its CONNECT with a CONNACK of ``return_code``."""

    def __init__(self, return_code: int) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._return_code = return_code
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        with conn:
            conn.settimeout(5)
            conn.recv(4096)  # the CONNECT
            conn.sendall(bytes([0x20, 0x02, 0x00, self._return_code]))
            try:
                conn.recv(4096)  # until the client hangs up
            except OSError:
                pass

    def __enter__(self) -> "_ConnackServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._listener.close()
        self._thread.join(5)


def test_the_probe_is_judged_by_the_appliances_client_id_prefix(mosquitto_factory):
    # Mosquitto's clientid_prefixes admits the appliance's own id; a probe with an id of its own
    # making was refused for its id and taken for "login required" while anyone could connect.
    broker = mosquitto_factory(allow_anonymous=True, extra_config=["clientid_prefixes edge-app-edge"])
    config = MQTTConfig(host=broker.host, port=broker.port, username="edge-02", password="pw")
    probe = probe_anonymous(config, "edge-02")
    assert probe.outcome is ProbeOutcome.ACCEPTED, probe
    ids = [line for line in broker.log_text().splitlines() if "edge-app-edge-02-probe-" in line]
    assert ids, broker.log_text()[-2000:]


def test_probe_client_ids_are_the_appliances_own_and_distinct():
    config = MQTTConfig(client_id="cam-box")
    first, second = probe_client_id(config, "dev1"), probe_client_id(config, "dev1")
    assert first.startswith("cam-box-probe-") and second.startswith("cam-box-probe-") and first != second
    assert probe_client_id(MQTTConfig(), "dev1").startswith("edge-app-dev1-probe-")
