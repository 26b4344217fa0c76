"""TLS to the broker: server verification, client certificates, and failures that must not crash."""
from __future__ import annotations

import logging

import pytest

from tests.mqtt.helpers import wait_until
from testkit.certs import make_test_certificates


@pytest.fixture
def certs(tmp_path):
    return make_test_certificates(tmp_path / "certs")


def test_tls_with_client_certificate(mosquitto_factory, publisher_factory, certs):
    broker = mosquitto_factory(tls=certs, require_certificate=True)
    tls = {"enabled": True, "ca_certs": str(certs.ca), "certfile": str(certs.client_cert), "keyfile": str(certs.client_key)}
    pub = publisher_factory(broker, tls=tls)
    pub.start()
    wait_until(lambda: pub.connected and pub.stats()["published"] >= 1, 5, "TLS connection with birth acknowledged")


def test_untrusted_server_certificate_is_refused_quietly(mosquitto_factory, publisher_factory, certs, tmp_path, caplog):
    broker = mosquitto_factory(tls=certs)
    other = make_test_certificates(tmp_path / "other")
    pub = publisher_factory(broker, tls={"enabled": True, "ca_certs": str(other.ca)})
    with caplog.at_level(logging.WARNING, logger="edge_app.mqtt.publisher"):
        pub.start()
        wait_until(lambda: pub.last_error is not None, 5, "a failed TLS handshake")
    assert not pub.connected
    assert caplog.records


def test_insecure_skips_only_the_hostname_check(mosquitto_factory, publisher_factory, tmp_path):
    certs = make_test_certificates(tmp_path / "misnamed", server_names=["DNS:elsewhere.invalid"])
    broker = mosquitto_factory(tls=certs)
    strict = publisher_factory(broker, client_id="strict", tls={"enabled": True, "ca_certs": str(certs.ca)})
    strict.start()
    lax = publisher_factory(broker, client_id="lax", tls={"enabled": True, "ca_certs": str(certs.ca), "insecure": True})
    lax.start()
    wait_until(lambda: lax.connected, 5, "insecure TLS connection")
    wait_until(lambda: strict.last_error is not None, 5, "hostname mismatch")
    assert not strict.connected


def test_missing_ca_file_is_logged_not_raised(mosquitto_factory, publisher_factory, tmp_path, caplog):
    broker = mosquitto_factory()
    pub = publisher_factory(broker, tls={"enabled": True, "ca_certs": str(tmp_path / "nope.pem")})
    with caplog.at_level(logging.ERROR, logger="edge_app.mqtt.publisher"):
        pub.start()
    assert "TLS" in (pub.last_error or "")
    assert any(r.levelno == logging.ERROR for r in caplog.records)
    assert pub.stats()["connected"] is False
    pub.stop()
